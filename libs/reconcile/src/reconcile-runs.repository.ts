import type { Prisma, PrismaClient } from '@tickets/db';
import type { Finding, ReconcileReport } from './reconcile';

export type ReconcileTrigger = 'schedule' | 'cli';

/** One row of reconcile_runs: a reconciliation that ran, and the checks that found something. */
export interface ReconcileRun extends ReconcileReport {
  trigger: ReconcileTrigger;
}

export interface StoredReconcileRun extends ReconcileRun {
  id: string;
}

/** The reconcile_runs table: one row per run (scheduled or by hand). Each method is one statement, atomic on its own. */
export class ReconcileRunsRepository {
  constructor(private readonly prisma: PrismaClient) {}

  /** Records one finished run (never inside a caller's transaction). */
  async record(run: ReconcileRun): Promise<StoredReconcileRun> {
    const row = await this.prisma.reconcileRun.create({
      data: {
        trigger: run.trigger,
        startedAt: run.startedAt,
        finishedAt: run.finishedAt,
        ticketsChecked: run.ticketsChecked,
        duplicateTickets: run.duplicateTickets,
        findings: run.findings as unknown as Prisma.InputJsonValue,
      },
    });
    return toRun(row);
  }

  /** The run that finished last, of any trigger or of one (`trigger`); null when none ran. */
  async latest(trigger?: ReconcileTrigger): Promise<StoredReconcileRun | null> {
    const row = await this.prisma.reconcileRun.findFirst({
      where: trigger ? { trigger } : {},
      orderBy: [{ finishedAt: 'desc' }, { id: 'desc' }],
    });
    return row ? toRun(row) : null;
  }
}

type Row = Awaited<ReturnType<PrismaClient['reconcileRun']['create']>>;

function toRun(row: Row): StoredReconcileRun {
  return {
    id: row.id.toString(),
    trigger: row.trigger as ReconcileTrigger,
    startedAt: row.startedAt,
    finishedAt: row.finishedAt,
    ticketsChecked: row.ticketsChecked,
    duplicateTickets: row.duplicateTickets,
    findings: row.findings as unknown as Finding[],
  };
}
