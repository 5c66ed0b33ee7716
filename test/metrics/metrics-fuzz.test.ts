import { describe, expect, it } from 'vitest';
import { expectAnsweredCleanly, fuzzListener, useFuzzDaemon } from '../helpers/fuzz-daemon.js';

// The Prometheus listener (metrics.listen) against 500+ malformed requests from a fixed seed
// (FUZZ_SEED replays another), over TCP to a real daemon.

const daemon = useFuzzDaemon('ta-metrics-fuzz-');

describe('the metrics listener under malformed requests', () => {
  it('answers each with a 4xx or 5xx, and the daemon serves on as the same process', { timeout: 90_000 }, async () => {
    const d = daemon.get();
    const run = await fuzzListener(d, 'metrics', { host: '127.0.0.1', port: d.metricsPort }, { paths: ['/metrics', '/', '/metrics?x=1'] }, async () => {
      const res = await fetch(`http://127.0.0.1:${d.metricsPort}/metrics`);
      expect(res.status).toBe(200);
      expect(await res.text()).toContain('# TYPE ');
      // The listener keeps at most 8 connections (a scraper or two): batches of 7 leave one for this check.
    }, { batchSize: 7, waitMs: 150 });
    expectAnsweredCleanly(d, run);
  });
});
