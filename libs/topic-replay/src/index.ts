export { replayTopic, isReplayStart } from './topic-replay';
export type { ReplayRequest, ReplayDeps, ReplayOutcome } from './topic-replay';
export { progressLine, replayReport } from './replay-progress';
export { ReplayRepository } from './replay.repository';
export type { ReplayPartitionPlan, ReplayProgress } from './replay.repository';
