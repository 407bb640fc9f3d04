import { Readable } from 'node:stream';
import type { PrismaClient } from '@tickets/db';
import { webhooksCommand } from '../../apps/cli/src/webhooks.command';

/** `webhooks set --tenant <slug> --url <url> --secret-file -` with the secret on stdin, as an operator runs it. */
export function setTenantWebhook(
  prisma: PrismaClient,
  slug: string,
  url: string,
  secret: string,
  out: (line: string) => void = () => undefined,
): Promise<number> {
  return webhooksCommand(['set', '--tenant', slug, '--url', url, '--secret-file', '-'], {
    prisma,
    out,
    err: () => undefined,
    stdin: Readable.from([`${secret}\n`]),
  });
}
