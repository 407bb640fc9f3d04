// ops/prometheus/alerts.yml and ops/grafana/tickets-dashboard.json: they parse (YAML, JSON, and every
// expression with Prometheus' own PromQL grammar), have what Prometheus and Grafana need, and name
// only metrics and labels that the processes really register. The names come from the registries
// the processes build (the API app, the relay, the notifier's kit and dispatcher, the agent client),
// not from a list kept by hand.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parser } from '@prometheus-io/lezer-promql';
import { Registry, collectDefaultMetrics } from 'prom-client';
import { parse as parseYaml } from 'yaml';
import { ticketClientMetrics } from '@tickets/agent-client';
import { loadEventConsumerConfig } from '@tickets/config';
import { TicketEventsServer } from '@tickets/event-consumer';
import { createLogger } from '@tickets/logger';
import { OutboxRelay, relayOptionsFromConfig } from '@tickets/outbox';
import { notifierOptions } from '../../apps/consumer/src/consumer.app';
import { NotifierDispatcherService } from '../../apps/consumer/src/notifier-dispatcher.service';
import { createApiApp } from '../../apps/ticket-api/src/app.factory';
import { Metrics } from '../../apps/ticket-api/src/metrics/metrics';
import { ROOT, testConfig } from '../support/stack';

interface Rule {
  alert?: string;
  record?: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}
interface Panel {
  id: number;
  type: string;
  title: string;
  datasource?: { uid: string };
  gridPos: { x: number; y: number; w: number; h: number };
  targets?: Array<{ refId: string; expr: string }>;
}

const alerts = parseYaml(readFileSync(join(ROOT, 'ops/prometheus/alerts.yml'), 'utf8')) as {
  groups: Array<{ name: string; rules: Rule[] }>;
};
const dashboard = JSON.parse(readFileSync(join(ROOT, 'ops/grafana/tickets-dashboard.json'), 'utf8')) as {
  uid: string;
  panels: Panel[];
  templating: { list: Array<{ name: string }> };
};
const rules = alerts.groups.flatMap((g) => g.rules);
const recorded = new Set(rules.flatMap((r) => (r.record ? [r.record] : [])));
/** Every expression with where it comes from; Grafana's interval variable becomes a duration PromQL knows. */
const expressions = [
  ...rules.map((r) => ({ where: `alert ${r.alert ?? r.record}`, expr: r.expr })),
  ...dashboard.panels.flatMap((p) =>
    (p.targets ?? []).map((t) => ({
      where: `panel "${p.title}" ${t.refId}`,
      expr: t.expr.replaceAll('$__rate_interval', '5m'),
    })),
  ),
];

/** Series name -> its label names, from the registries the processes build. */
const registered = new Map<string, Set<string>>();

beforeAll(async () => {
  const registries: Registry[] = [];
  const logger = createLogger('silent', 'ops-files-test');
  const config = testConfig();
  // The API (relay off: its metrics come from the relay below, the same class the API uses).
  const api = await createApiApp(config, logger);
  registries.push(api.get(Metrics).registry);
  // The relay, as npm run start:relay builds it (never started: its metrics are registered in the constructor).
  const relayRegistry = new Registry();
  collectDefaultMetrics({ register: relayRegistry });
  new OutboxRelay(relayOptionsFromConfig(config, logger, { registry: relayRegistry }));
  registries.push(relayRegistry);
  // The notifier: the kit's transport and the dispatcher on its registry, as createConsumerApp wires them.
  const server = new TicketEventsServer(notifierOptions(config, loadEventConsumerConfig({}), logger));
  const dispatcher = new NotifierDispatcherService(config, 'ops-files-test', true, undefined, server.metrics.registry);
  registries.push(server.metrics.registry);
  // The agent client, as the MCP server serves it.
  const agent = new Registry();
  ticketClientMetrics(agent);
  registries.push(agent);
  for (const registry of registries) {
    // prom-client's typings hide the metric objects' get() and labelNames; both are public in the implementation.
    for (const metric of registry.getMetricsAsArray() as unknown as Array<{
      get(): Promise<{ name: string; type: string }>;
      labelNames?: string[];
    }>) {
      const { name, type } = await metric.get();
      const labels = new Set(metric.labelNames ?? []);
      const series =
        type === 'histogram'
          ? ['_bucket', '_sum', '_count'].map((s) => name + s)
          : type === 'summary'
            ? [name, `${name}_sum`, `${name}_count`]
            : [name];
      if (type === 'histogram') labels.add('le');
      if (type === 'summary') labels.add('quantile');
      for (const s of series) registered.set(s, new Set([...(registered.get(s) ?? []), ...labels]));
    }
  }
  await Promise.all([api.close(), dispatcher.prisma.$disconnect(), server.close()]);
});

/** The metric names, matcher label names and grouping label names of one expression; throws on a syntax error. */
function readExpression(expr: string): { metrics: Array<{ name: string; labels: string[] }>; grouping: string[] } {
  const tree = parser.parse(expr);
  const errors: number[] = [];
  const metrics: Array<{ name: string; labels: string[] }> = [];
  const grouping: string[] = [];
  const text = (from: number, to: number) => expr.slice(from, to);
  tree.iterate({
    enter(node) {
      if (node.type.isError) errors.push(node.from);
      if (node.name === 'VectorSelector') {
        const id = node.node.getChild('Identifier');
        const matchers = node.node.getChild('LabelMatchers');
        const labels: string[] = [];
        if (matchers) {
          const c = matchers.cursor();
          do if (c.name === 'LabelName') labels.push(text(c.from, c.to));
          while (c.next() && c.from < matchers.to);
        }
        if (id) metrics.push({ name: text(id.from, id.to), labels });
      }
      if (node.name === 'GroupingLabels') {
        node.node.getChildren('LabelName').forEach((l) => grouping.push(text(l.from, l.to)));
      }
    },
  });
  if (errors.length) throw new Error(`PromQL syntax error at ${errors.join(', ')} in: ${expr}`);
  return { metrics, grouping };
}

describe('the alert rules (ops/prometheus/alerts.yml)', () => {
  it('have what Prometheus needs: unique names, a valid `for`, a severity, a summary and a runbook line', () => {
    const names = rules.map((r) => r.alert);
    expect(new Set(names).size).toBe(names.length);
    for (const r of rules) {
      expect(r.alert ?? r.record).toMatch(/^[A-Za-z_:][A-Za-z0-9_:]*$/);
      if (r.for !== undefined) expect(r.for).toMatch(/^(\d+(ms|s|m|h|d|w|y))+$/);
      if (r.alert) {
        expect([r.alert, r.labels?.severity]).toEqual([r.alert, expect.stringMatching(/^(page|warning)$/)]);
        expect([r.alert, r.annotations?.summary, r.annotations?.runbook]).toEqual([
          r.alert,
          expect.any(String),
          expect.any(String),
        ]);
      }
    }
  });

  it('cover the indicators and the event path', () => {
    const covered = (metric: string) => rules.some((r) => r.alert && r.expr.includes(metric));
    for (const metric of [
      'outbox_lag_seconds',
      'outbox_dead_letter_rows',
      'notifications_dead',
      'event_consumer_lag',
      'tickets_http_request_duration_seconds_count{status=~"5.."}',
      'tickets_reconcile_duplicate_creation_ratio',
      'tickets_idempotency_keys_in_flight',
      'tickets_reconcile_last_run_timestamp_seconds',
      'tickets_idempotency_status_queries_total',
      'tickets_idempotency_outcomes_total{outcome="replay"}',
      'agent_client_retries_total',
      'agent_client_circuit_breaker_trips_total',
    ]) {
      expect([metric, covered(metric)]).toEqual([metric, true]);
    }
    expect(rules.find((r) => r.alert === 'TicketsDuplicateCreationRate')!.expr).toMatch(/> 0\.001$/);
    expect(rules.find((r) => r.alert === 'TicketsIdempotencyKeysInFlight')).toMatchObject({
      expr: expect.stringMatching(/> 100$/),
      for: '10m',
    });
  });
});

describe('the dashboard (ops/grafana/tickets-dashboard.json)', () => {
  it('has unique panel ids, panels inside the 24-column grid, and queries on its Prometheus datasource variable', () => {
    const ids = dashboard.panels.map((p) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(dashboard.templating.list.map((v) => v.name)).toContain('datasource');
    for (const p of dashboard.panels) {
      expect(p.gridPos.x + p.gridPos.w).toBeLessThanOrEqual(24);
      if (p.type === 'row') continue;
      expect([p.title, p.datasource?.uid, p.targets?.length]).toEqual([p.title, '${datasource}', expect.any(Number)]);
      expect(p.targets!.length).toBeGreaterThan(0);
    }
  });
});

describe('every expression', () => {
  it('parses with the PromQL grammar', () => {
    expect(expressions.length).toBeGreaterThan(40);
    for (const { expr } of expressions) expect(() => readExpression(expr)).not.toThrow();
  });

  it('names only metrics, and labels of them, that a process registers', () => {
    expect(registered.size).toBeGreaterThan(50);
    const problems: string[] = [];
    for (const { where, expr } of expressions) {
      const { metrics, grouping } = readExpression(expr);
      const labelsHere = new Set<string>();
      for (const m of metrics) {
        const labels = registered.get(m.name) ?? (recorded.has(m.name) ? new Set<string>() : undefined);
        if (!labels) {
          problems.push(`${where}: metric ${m.name} is not registered by any process`);
          continue;
        }
        labels.forEach((l) => labelsHere.add(l));
        for (const l of m.labels) if (!labels.has(l)) problems.push(`${where}: ${m.name} has no label ${l}`);
      }
      for (const l of grouping)
        if (!labelsHere.has(l)) problems.push(`${where}: grouping by ${l}, which none of its metrics has`);
    }
    expect(problems).toEqual([]);
  });

  it('the check catches a name that does not exist (the comparison is not vacuous)', () => {
    const { metrics } = readExpression('sum by (outcome) (rate(webhook_deliveries_totl{outcome="dead"}[5m]))');
    expect(metrics).toEqual([{ name: 'webhook_deliveries_totl', labels: ['outcome'] }]);
    expect(registered.has('webhook_deliveries_totl')).toBe(false);
    expect(registered.get('webhook_deliveries_total')).toEqual(new Set(['group', 'outcome']));
    expect(() => readExpression('sum(rate(x[5m])')).toThrow(/syntax error/);
  });
});
