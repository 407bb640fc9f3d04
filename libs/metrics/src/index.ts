// @tickets/metrics: the /metrics endpoint of the processes without an HTTP API of their own.
export { serveMetrics, type MetricsEndpoint, type Readiness } from './metrics-server';
