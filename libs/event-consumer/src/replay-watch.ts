import type { Pool } from 'pg';
import type { Place } from './inbox.repository';
import type { ReplayCountersRepository } from './replay-counters.repository';

/**
 * Whether a replay of the group is running, read once after each join of the group and then kept:
 * a replay can only start while the group has no members (replay/topic-replay.ts pauses them, see
 * pause-watch.ts, or refuses), so a member learns of a new one only by joining again. A replay seen running is read again every
 * `recheckMs`, so the counting statement stops soon after it completes.
 */
export class ReplayWatch {
  private known = new Map<string, { running: boolean; at: number }>();

  constructor(
    private readonly pool: Pool,
    private readonly repo: ReplayCountersRepository,
    private readonly recheckMs = 10_000,
  ) {}

  /** Called on every join of the group (the assignment may come after a replay moved the offsets). */
  forget(): void {
    this.known.clear();
  }

  async running(place: Place): Promise<boolean> {
    const k = this.known.get(place.topic);
    if (k && (!k.running || Date.now() - k.at < this.recheckMs)) return k.running;
    const running = await this.repo.running(this.pool, place);
    this.known.set(place.topic, { running, at: Date.now() });
    return running;
  }
}
