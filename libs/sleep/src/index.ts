export { WakeableSleep } from './wakeable-sleep';
export type { SleepEnd } from './wakeable-sleep';
export { OutageLog } from './outage-log';
export type { DependencyState } from './outage-log';
