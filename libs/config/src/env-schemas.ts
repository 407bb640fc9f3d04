import { z } from 'zod';
import { parseDuration } from './duration';

/** STATS_GROUP_ID: the stats consumer's group, whose projection the API serves (both processes read it). */
export const statsGroupIdEnv = z.string().min(1).default('ticket-stats');

/** An environment variable holding a duration (`500ms`, `30s`, `24h`, `30d`), parsed to milliseconds. */
export const durationEnv = (fallback: string) =>
  z
    .string()
    .default(fallback)
    .transform((v, ctx) => {
      try {
        return parseDuration(v);
      } catch (e) {
        ctx.addIssue({ code: 'custom', message: (e as Error).message });
        return z.NEVER;
      }
    });
