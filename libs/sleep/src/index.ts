export { WakeableSleep } from './wakeable-sleep';
export type { SleepEnd } from './wakeable-sleep';
