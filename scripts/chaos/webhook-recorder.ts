// The chaos run's webhook receiver: checks each delivery's Standard Webhooks signature and records
// which event arrived under which webhook-id, and when.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WEBHOOK_HEADERS, verifyWebhook } from '@tickets/notifications';

export interface Delivery {
  at: number;
  webhookId: string;
  eventId: string;
  type: string;
  ticketId: string;
}

export class WebhookRecorder {
  readonly deliveries: Delivery[] = [];
  badSignatures = 0;
  private server?: Server;

  constructor(private readonly secret: string) {}

  async start(port: number): Promise<string> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (d: Buffer) => chunks.push(d));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        if (!verifyWebhook(this.secret, req.headers, body)) {
          this.badSignatures++;
          res.writeHead(401).end();
          return;
        }
        try {
          const n = JSON.parse(body) as { data?: { id?: string; type?: string; ticketId?: string } };
          this.deliveries.push({
            at: Date.now(),
            webhookId: String(req.headers[WEBHOOK_HEADERS.id] ?? ''),
            eventId: String(n.data?.id ?? ''),
            type: String(n.data?.type ?? ''),
            ticketId: String(n.data?.ticketId ?? ''),
          });
          res.writeHead(204).end();
        } catch {
          res.writeHead(400).end();
        }
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(port, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/webhooks`;
  }

  /** First delivery at or after `since` (ms epoch). */
  firstAfter(since: number): Delivery | undefined {
    return this.deliveries.find((d) => d.at >= since);
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}
