// @tickets/consumer as a library, for the benches that drive the notifier in-process. The process itself
// starts from dist/main.js.
export { createConsumerApp, notifierOptions, type NotifierApp } from './consumer.app';
