import type { KeyGuard } from '@tickets/idempotency';

/** A command sent with an Idempotency-Key. */
export interface KeyedCommand {
  tenantId: string;
  key: string;
  /** e.g. `ticket.create`: a key used for one operation is rejected for another. */
  operation: string;
  /** The validated, normalised request: fingerprinted, stored with the key, compared on reuse. */
  request: Record<string, unknown>;
}

/** What a command answered when it ran; stored with its key, and given back byte for byte on a retry. */
export interface CommandAnswer<O extends string = string> {
  /** What the command did (`created`, `deduplicated`, `cancelled`, ...), stored with the key. */
  outcome: O;
  status: number;
  /** The exact response body (JSON text). */
  body: string;
  ticketId: string;
}

/** What a keyed command returns: the answer, and whether it came from the key's store (a retry). */
export interface KeyedResult<O extends string = string> {
  answer: CommandAnswer<O>;
  fromStore: boolean;
}

/** One attempt of a command that writes in one statement with the key guard composed into it. */
export type StatementAttempt<O extends string> =
  /** The guard stopped the writes: the key is in flight elsewhere or was used before. */
  | { kind: 'blocked'; guard: KeyGuard }
  /** The command's writes and its key row committed together. */
  | { kind: 'recorded'; answer: CommandAnswer<O> }
  /** An answer found without writing (e.g. an existing ticket): the runner records the key. */
  | { kind: 'unrecorded'; answer: CommandAnswer<O> }
  /** A race was lost and nothing was written: run the attempt again. */
  | { kind: 'again' };
