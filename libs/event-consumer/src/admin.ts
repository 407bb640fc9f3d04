// @tickets/event-consumer/admin: maintenance of a consumer's kit tables and group, for the
// `ticket-events` bin and for services that run it from their own tooling. Not the handler API.
export {
  migrate,
  schemaVersion,
  KitSchemaOutdated,
  type MigrateOptions,
  type MigrateResult,
} from './kit-schema.repository';
export { KIT_MIGRATIONS, KIT_SCHEMA_VERSION, checksumOf } from './kit.migrations';
export { DEFAULT_SCHEMA, KitTables, KitSchemaError } from './kit-schema';
export { forgetGroupInbox } from './group-inbox';
// Takes a dead consumer's member out of its group (the kit does it itself before a rebuilt consumer joins).
export { leaveAsStaleMember, type LeaveOutcome } from './stale-member';
export {
  replayTopic,
  isReplayStart,
  type ReplayRequest,
  type ReplayDeps,
  type ReplayOutcome,
} from './replay/topic-replay';
export { progressLine, replayReport } from './replay/replay-progress';
// A live group's pause for a replay (replayTopic pauses by default): the requests its members read.
export { GroupPauseRepository, type PauseClaim, type PauseState } from './group-pause.repository';
export { pauseGroup, awaitRejoin, type PauseSettings, type PauseHold, type PauseOutcome } from './replay/group-pause';
export type { ReplayPartitionPlan, ReplayProgress } from './replay/replay.repository';
export { ConsumerDeadLetters, type ConsumerDeadLettersOptions } from './dead-letters/consumer-dead-letters';
export type {
  ConsumerActionRequest,
  ConsumerAuditEntry,
  ConsumerDeadLetterDetail,
  ConsumerDeadLetterFilter,
  ConsumerDeadLetterItem,
  ConsumerDeadLetterState,
  FollowedCopy,
  FollowOptions,
  FollowResult,
  KitActionOutcome,
  KitActionResult,
  KitActor,
} from './dead-letters/consumer-dead-letters.types';
export {
  deadLetterFate,
  followReport,
  followRequeue,
  type FollowCommands,
  type FollowRequeueOptions,
} from './dead-letters/follow-report';
export { kafkaRepublisher, type MessageRepublisher, type RawMessageOut } from './dead-letters/message-republisher';
export { storedBytes, stillInvalid, eventIdOf } from './dead-letters/raw-message';
export { isDatabaseUnavailable, sqlState } from './database-errors';
// Stops kafkajs's 1 ms timer per idle connection (and its TimeoutNegativeWarning), for a kafkajs client the kit does not create; also at @tickets/event-consumer/kafkajs-request-queue.
export { patchKafkajsRequestQueue } from './kafkajs-request-queue';
export { patchKafkajsProduceEncoding, KeyHashPartitioner } from './kafkajs-produce-encoding';
export { wellFormedTraceparent } from './tracing';
export { DEFAULTS as OPTION_DEFAULTS, resolveOptions, type ResolvedOptions } from './ticket-events.options';
export { optionsFromEnv, binEnvironment } from './ticket-events.env';
