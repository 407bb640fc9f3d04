import type { ChunkControl } from './chunk-errors';

/** How often a running handler offers kafkajs a heartbeat (kafkajs sends one only when its heartbeatInterval has passed). */
export const HEARTBEAT_OFFER_MS = 500;

/**
 * Waits for a handler, offering a heartbeat every HEARTBEAT_OFFER_MS while it runs. A handler slower than the
 * session timeout then keeps its partition: without this the coordinator evicted the member, the chunk was
 * rolled back and read again after the rejoin, and a handler that always took that long never got past it (no
 * attempt counted, no dead letter).
 * A rebalance that begins meanwhile (REBALANCE_IN_PROGRESS) stops the offers and nothing more: the member still
 * owns the partition until it rejoins, so the handler's work goes on to its commit as it did before these
 * heartbeats, and the heartbeat after it (kafkajs answers it the same) decides, as it always has: the per-event
 * form rolls its chunk back, a chunk committed is drained before the rejoin. Any other heartbeat failure (the
 * member evicted) is thrown once the handler has settled, in place of the handler's own error if it failed too:
 * the chunk is rolled back and read again after the rejoin, with no attempt counted.
 */
export async function heartbeatWhile<T>(control: ChunkControl, work: () => Promise<T>): Promise<T> {
  let failed: { err: unknown } | undefined;
  let beating = false;
  let rebalancing = false;
  const timer = setInterval(() => {
    if (failed || beating || rebalancing) return;
    beating = true;
    control.heartbeat().then(
      () => (beating = false),
      (err: unknown) => {
        if ((err as { type?: unknown } | null)?.type === 'REBALANCE_IN_PROGRESS') rebalancing = true;
        else failed = { err };
      },
    );
  }, HEARTBEAT_OFFER_MS);
  try {
    const value = await work();
    if (failed) throw failed.err;
    return value;
  } catch (err) {
    throw failed ? failed.err : err;
  } finally {
    clearInterval(timer);
  }
}
