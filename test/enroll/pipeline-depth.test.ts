import { describe, expect, it } from 'vitest';
import { MAX_DEPTH, pipelineDepth } from '../../src/enroll/pipeline-depth.js';

// The factor the outbox's windows take from the WAL's typical sync time. The figures it was set
// by are in src/enroll/pipeline-depth.ts; test/enroll/slow-disk.test.ts shows what it buys.

describe('the outbox pipeline depth', () => {
  it('stays 1 while syncs are as fast as this VM\'s disk, or not yet measured', () => {
    expect(pipelineDepth(0)).toBe(1);
    expect(pipelineDepth(Number.NaN)).toBe(1);
    expect(pipelineDepth(-3)).toBe(1);
    expect(pipelineDepth(1.2)).toBe(1);
    expect(pipelineDepth(5.9)).toBe(1);
  });

  it('grows a step per 6 ms of sync, as an SD card\'s flush, up to its bound', () => {
    expect(pipelineDepth(6)).toBe(2);
    expect(pipelineDepth(21)).toBe(4);
    expect(pipelineDepth(40)).toBe(7);
    expect(pipelineDepth(50)).toBe(MAX_DEPTH);
    expect(pipelineDepth(5_000)).toBe(MAX_DEPTH);
  });
});
