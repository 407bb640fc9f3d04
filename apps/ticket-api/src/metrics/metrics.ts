import { Injectable } from '@nestjs/common';
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** Prometheus metrics of one API instance (its own registry, so two apps in one process don't clash). */
@Injectable()
export class Metrics {
  readonly registry = new Registry();
  readonly writes = new Counter({
    name: 'tickets_write_outcomes_total',
    help: 'Write requests by outcome (created, replayed, deduplicated, cancelled, already_cancelled)',
    labelNames: ['outcome'],
    registers: [this.registry],
  });
  readonly problems = new Counter({
    name: 'tickets_http_problems_total',
    help: 'Problem responses by code',
    labelNames: ['code'],
    registers: [this.registry],
  });
  readonly mcpToolCalls = new Counter({
    name: 'tickets_mcp_tool_calls_total',
    help: 'MCP tool calls over /mcp by tool and outcome (ok; error: a tool error the model saw; invalid: arguments the SDK refused before the tool ran)',
    labelNames: ['tool', 'outcome'],
    registers: [this.registry],
  });
  readonly httpDuration = new Histogram({
    name: 'tickets_http_request_duration_seconds',
    help: 'HTTP request duration by route and status',
    labelNames: ['method', 'route', 'status'],
    buckets: [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [this.registry],
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry });
  }
}
