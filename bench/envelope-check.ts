// What the relay's check of each claimed row's envelope costs (buildOutboundMessage: the stored text
// parsed, then checked against TicketEvent) with the contracts' isTicketEvent against zod's
// TicketEvent.safeParse, in the same process and run: each round times both over the same envelope
// texts, in alternating order, and reports the process's CPU time (user + system, process.cpuUsage:
// the collector's helper threads included) per envelope, JSON.parse included in both.
//
//   npm run bench:envelope-check      (build, then node dist/bench/envelope-check.js)
//
// Env: ENVELOPE_BENCH_ENVELOPES (2000 distinct texts), ENVELOPE_BENCH_PASSES (100 per round),
// ENVELOPE_BENCH_ROUNDS (6).
import { randomUUID } from 'node:crypto';
import { cpus } from 'node:os';
import { isTicketEvent, TicketEvent } from '@tickets/contracts';
import { benchTicketCreated } from './support/ticket-event';
import { fixed, median } from './support/stats';
import { positiveNumberEnv as num } from './support/paths';

const ENVELOPES = num('ENVELOPE_BENCH_ENVELOPES', 2_000);
const PASSES = num('ENVELOPE_BENCH_PASSES', 100);
const ROUNDS = num('ENVELOPE_BENCH_ROUNDS', 6);

type Variant = 'zod' | 'check';
const VERDICT: Record<Variant, (json: unknown) => boolean> = {
  zod: (json) => TicketEvent.safeParse(json).success,
  check: (json) => isTicketEvent(json),
};

/** CPU µs per envelope for one variant over every text, PASSES times. */
function measure(variant: Variant, texts: string[]): number {
  const verdict = VERDICT[variant];
  let accepted = 0;
  const cpu0 = process.cpuUsage();
  for (let p = 0; p < PASSES; p++) for (const t of texts) if (verdict(JSON.parse(t))) accepted++;
  const cpu = process.cpuUsage(cpu0);
  const n = PASSES * texts.length;
  if (accepted !== n) throw new Error(`${variant} accepted ${accepted} of ${n} valid envelopes`);
  return (cpu.user + cpu.system) / n;
}

function main(): void {
  const tenantId = randomUUID();
  const texts = Array.from({ length: ENVELOPES }, () => JSON.stringify(benchTicketCreated(tenantId)));
  console.log(
    `envelope check: ${ENVELOPES} ticket.created.v1 texts of ~${texts[0].length} bytes, ${PASSES} passes per round, ` +
      `${ROUNDS} rounds; Node ${process.version}, ${cpus().length} × ${cpus()[0]?.model ?? '?'}`,
  );
  // Warm-up: both reach the optimising tier before the first timed round.
  measure('zod', texts);
  measure('check', texts);
  const ratios: number[] = [];
  const us: Record<Variant, number[]> = { zod: [], check: [] };
  for (let r = 0; r < ROUNDS; r++) {
    const order: Variant[] = r % 2 === 0 ? ['zod', 'check'] : ['check', 'zod'];
    const got = {} as Record<Variant, number>;
    for (const v of order) got[v] = measure(v, texts);
    us.zod.push(got.zod);
    us.check.push(got.check);
    ratios.push(got.check / got.zod);
    console.log(
      `round ${r + 1} (${order.join(' then ')}): zod ${fixed(got.zod, 2)} µs, check ${fixed(got.check, 2)} µs, ` +
        `check / zod ${fixed(ratios[r], 2)}×`,
    );
  }
  console.log(
    `median CPU per envelope, JSON.parse included: zod ${fixed(median(us.zod), 2)} µs, check ${fixed(median(us.check), 2)} µs; ` +
      `check / zod ${fixed(median(ratios), 2)}× (rounds ${ratios.map((x) => fixed(x, 2)).join(', ')})`,
  );
}

main();
