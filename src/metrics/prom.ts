// prom-client's classes without its index. The index (`import … from 'prom-client'`) also loads the
// Pushgateway (node:https, node:tls, node:zlib), the cluster aggregator and Summary, which the
// agent never uses; each built-in module the daemon loads stays resident as pages of the node
// binary (its source and code cache) plus its compiled functions. Only the four classes the agent
// uses are loaded, from prom-client's own files; the default process metrics only when asked
// for (prom-defaults.ts).
export { default as Counter } from 'prom-client/lib/counter.js';
export { default as Gauge } from 'prom-client/lib/gauge.js';
export { default as Histogram } from 'prom-client/lib/histogram.js';
export { default as Registry } from 'prom-client/lib/registry.js';
