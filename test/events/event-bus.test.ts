import { describe, expect, it } from 'vitest';
import { createEventBus } from '../../src/events/event-bus.js';

describe('the event bus', () => {
  it('numbers events in publication order and hands them to every subscriber', () => {
    const bus = createEventBus({ firstId: 100 });
    const a: number[] = [];
    const b: string[] = [];
    bus.subscribe((e) => a.push(e.id));
    const off = bus.subscribe((e) => b.push(e.type));
    bus.publish('faces.synced', { total: 1 });
    off();
    bus.publish('enroll.done', { kind: 'faces' });
    expect(a).toEqual([100, 101]);
    expect(b).toEqual(['faces.synced']);
    expect(bus.lastId()).toBe(101);
    expect(bus.subscribers()).toBe(1);
  });

  it('replays what followed an id, and says when part of it has fallen out of the buffer', () => {
    const bus = createEventBus({ capacity: 3, firstId: 1 });
    for (let i = 0; i < 5; i++) bus.publish('t', { i });
    // ids 1..5; the buffer holds 3, 4, 5
    expect(bus.since(5)).toEqual([]);
    expect(bus.since(3)!.map((e) => e.id)).toEqual([4, 5]);
    expect(bus.since(2)!.map((e) => e.id)).toEqual([3, 4, 5]);
    expect(bus.since(1)).toBeUndefined();
  });

  it('treats an id from another run of the daemon as gone', () => {
    const bus = createEventBus({ firstId: 1_000 });
    bus.publish('t', {});
    expect(bus.since(999)).toEqual([bus.since(999)![0]]);
    expect(bus.since(500)).toBeUndefined(); // an earlier run
    expect(bus.since(5_000)).toBeUndefined(); // not issued yet: a later run's id
  });

  it('does not keep level-meter events for replay, so a long recording cannot push results out', () => {
    const bus = createEventBus({ capacity: 2, firstId: 1 });
    bus.publish('enroll.done', { name: 'a' });
    for (let i = 0; i < 100; i++) bus.publish('voiceprint.level', { i });
    bus.publish('voiceprint.registered', { name: 'b' });
    expect(bus.since(0)!.map((e) => e.type)).toEqual(['enroll.done', 'voiceprint.registered']);
  });

  it('keeps publishing when a subscriber throws', () => {
    const bus = createEventBus();
    const seen: string[] = [];
    bus.subscribe(() => {
      throw new Error('boom');
    });
    bus.subscribe((e) => seen.push(e.type));
    expect(() => bus.publish('x', {})).not.toThrow();
    expect(seen).toEqual(['x']);
  });

  it('scrubs the secrets in use from event data, as the logger does', () => {
    let secrets = ['ts_live_secret_0001'];
    const bus = createEventBus({ secrets: () => secrets });
    const unread = bus.publish('x', { m: 'ts_live_secret_0001' });
    const e = bus.publish('faces.sync.failed', { code: 'TA_ERR_NETWORK', message: 'GET https://x/?k=ts_live_secret_0001 failed', nested: { also: 'ts_live_secret_0001' } });
    expect(e.data).toEqual({ code: 'TA_ERR_NETWORK', message: 'GET https://x/?k=[REDACTED] failed', nested: { also: '[REDACTED]' } });
    secrets = ['rotated_secret_0002'];
    expect(bus.publish('x', { m: 'rotated_secret_0002' }).data).toEqual({ m: '[REDACTED]' });
    expect(bus.since(e.id - 1)![0]!.data.message).toBe('GET https://x/?k=[REDACTED] failed');
    // Read first after the rotation: scrubbed of the secret in use when it was published.
    expect(bus.since(unread.id - 1)![0]!.data).toEqual({ m: '[REDACTED]' });
    // As the SSE stream writes it: the scrubbed data, nothing else.
    expect(JSON.parse(JSON.stringify(e))).toEqual({ id: e.id, type: 'faces.sync.failed', at: e.at, data: e.data });
    expect(JSON.stringify(bus.since(unread.id - 1))).not.toContain('ts_live_secret_0001');
  });
});
