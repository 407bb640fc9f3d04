import { parseDuration } from '@tickets/config';
import { ReconcileRunsRepository, duplicateCreationRatio, formatFindings, reconcileReport } from '@tickets/reconcile';
import { UsageProblem, type CliCommand, type Values } from './command-line';

interface ReconcileArgs {
  sinceMs: number;
  graceMs: number;
  group?: string;
  tenant: string | null;
  json: boolean;
}

function duration(values: Values, name: string, fallback: string): number | UsageProblem {
  const text = typeof values[name] === 'string' ? (values[name] as string) : fallback;
  try {
    return parseDuration(text);
  } catch (e) {
    return new UsageProblem(`--${name}: ${(e as Error).message}`);
  }
}

/** `reconcile`: the read-only cross-check of tickets, keys, outbox, inbox and notifications (libs/reconcile). */
export const reconcileCli: CliCommand<ReconcileArgs> = {
  name: 'reconcile',
  summary: 'check tickets, keys, outbox and notifications against each other',
  usage: ['reconcile [--since 24h] [--grace 5m] [--group <group>] [--tenant <slug>] [--json]'],
  details: [
    'Read-only. Lists every disagreement with a sample of ids and what to do about it; exit code 1 when it',
    'finds any. Outbox and inbox rows are purged after their retention, so missing events are looked for',
    'only among tickets younger than --since, and unconsumed events only among those older than --grace.',
    'A run over every tenant is recorded in reconcile_runs (trigger cli), as the scheduled runs are',
    '(RECONCILE_INTERVAL); a run with --tenant is not, since it does not speak for the whole database.',
  ],
  options: {
    since: {
      type: 'string',
      value: '<duration>',
      description: 'how far back to look for missing events and dead letters, e.g. 30m, 24h, 7d',
      default: '24h',
    },
    grace: {
      type: 'string',
      value: '<duration>',
      description: 'how old an unpublished event or pending notification must be to count',
      default: '5m',
    },
    group: {
      type: 'string',
      value: '<group>',
      description: 'the notifier consumer group whose inbox and notifications are checked',
      default: 'NOTIFIER_GROUP_ID, ticket-notifier',
    },
    tenant: { type: 'string', value: '<slug>', description: "check only this tenant's rows", default: 'every tenant' },
    json: {
      type: 'boolean',
      description: 'print {"ok","findings","ticketsChecked","duplicateTickets"} as JSON',
      default: 'off',
    },
  },
  validate(values) {
    const sinceMs = duration(values, 'since', '24h');
    if (sinceMs instanceof UsageProblem) return sinceMs;
    const graceMs = duration(values, 'grace', '5m');
    if (graceMs instanceof UsageProblem) return graceMs;
    return {
      sinceMs,
      graceMs,
      group: values.group as string | undefined,
      tenant: (values.tenant as string | undefined) ?? null,
      json: values.json === true,
    };
  },
  async run(args, { prisma, config, out, err }) {
    const now = Date.now();
    const report = await reconcileReport(prisma, {
      since: new Date(now - args.sinceMs),
      grace: new Date(now - args.graceMs),
      group: args.group ?? config.notifier.groupId,
      tenant: args.tenant,
      onProgress: (done, total, name) => err(`reconcile: [${done}/${total}] ${name}\n`),
    });
    if (args.tenant === null) await new ReconcileRunsRepository(prisma).record({ trigger: 'cli', ...report });
    const { findings, ticketsChecked, duplicateTickets } = report;
    if (args.json) out(JSON.stringify({ ok: findings.length === 0, findings, ticketsChecked, duplicateTickets }));
    else {
      for (const line of formatFindings(findings)) out(line);
      out(
        `duplicate-creation rate: ${duplicateTickets} of ${ticketsChecked} tickets (${(duplicateCreationRatio(report) * 100).toFixed(3)} %)`,
      );
    }
    return findings.length ? 1 : 0;
  },
};
