// prom-client's default process metrics (they load node:v8 and perf_hooks' event-loop histogram),
// imported on demand: see startProcessMetrics in src/daemon/daemon-metrics.ts.
export { default as collectDefaultMetrics } from 'prom-client/lib/defaultMetrics.js';
