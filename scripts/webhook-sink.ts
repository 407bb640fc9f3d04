// A local webhook receiver for `npm start`: prints every notification the consumer delivers, after
// checking its Standard Webhooks signature, so a newcomer sees the whole flow without a server of
// their own. Env: WEBHOOK_SINK_PORT (3999), NOTIFY_WEBHOOK_SECRET (required).
import { createServer } from 'node:http';
import { WEBHOOK_HEADERS, verifyWebhook } from '@tickets/notifications';

const secret = process.env.NOTIFY_WEBHOOK_SECRET;
const port = Number(process.env.WEBHOOK_SINK_PORT ?? 3999);
if (!secret) {
  process.stderr.write('webhook-sink: set NOTIFY_WEBHOOK_SECRET\n');
  process.exit(2);
}

const seen = new Set<string>();
createServer((req, res) => {
  let body = '';
  req.on('data', (d) => (body += d));
  req.on('end', () => {
    const h = (name: string) => String(req.headers[name] ?? '');
    const id = h(WEBHOOK_HEADERS.id);
    const ok = verifyWebhook(secret!, req.headers, body);
    let what: string;
    try {
      const n = JSON.parse(body) as {
        type?: string;
        data?: { type?: string; ticketId?: string; data?: { title?: string; status?: string } };
      };
      const e = n.data ?? {};
      what = `${e.type ?? n.type} ticket ${e.ticketId} "${e.data?.title ?? ''}" (${e.data?.status ?? '?'})`;
    } catch {
      what = `${body.length} bytes`;
    }
    const again = seen.has(id) ? ' (redelivery of the same webhook-id)' : '';
    seen.add(id);
    process.stdout.write(`webhook ${ok ? 'signature ok' : 'BAD SIGNATURE'}: ${what} webhook-id ${id}${again}\n`);
    res.writeHead(ok ? 204 : 401).end();
  });
}).listen(port, '127.0.0.1', () =>
  process.stdout.write(`webhook-sink: listening on http://127.0.0.1:${port}/webhooks\n`),
);
