import type { CliContext } from './command.js';
import { writeJson, writeLine } from './output.js';
import { openLiveArea } from './live-area.js';
import { connectControl } from '../control/control-client.js';
import { formatStatus } from '../daemon/status-format.js';
import { openEventStream, type EventStreamClient } from '../events/sse-client.js';
import { TRANSIENT_TYPES } from '../events/event-bus.js';
import { describeError } from '../errors.js';
import { wait } from '../util/backoff.js';
import { withLinkedSignal } from '../util/linked-signal.js';

// `status --watch`: the status, redrawn every interval and as soon as the daemon reports something
// (an event on GET /events), until Ctrl-C. On a terminal the block is redrawn in place; piped, each
// round is printed below the last; with --json, one JSON object per line. A daemon that goes away
// (a restart) is said so, and watched again when it is back.

export async function watchStatus(ctx: CliContext, socketPath: string, json: boolean, intervalMs: number): Promise<number> {
  const area = await openLiveArea(ctx, json);
  let wake = new AbortController();
  let stream: EventStreamClient | undefined;
  const follow = () => {
    if (stream) return;
    const s = openEventStream({
      socketPath,
      onEvent: (e) => {
        if (!TRANSIENT_TYPES.has(e.type)) wake.abort();
      },
    });
    stream = s;
    s.ready.catch(() => undefined);
    void s.closed.then(() => {
      if (stream === s) stream = undefined;
    });
  };
  try {
    while (!ctx.shutdown.aborted) {
      const at = new Date();
      let text: string;
      try {
        const status = await (await connectControl(socketPath, { timeoutMs: 10_000 })).status();
        follow();
        if (json) {
          writeJson(ctx, status);
          text = '';
        } else {
          text = formatStatus(status);
        }
      } catch (err) {
        if (json) writeJson(ctx, { error: describeError(err), at: at.toISOString() });
        text = `${describeError(err)}\n(trying again)`;
      }
      if (!json) {
        const every = `${(intervalMs / 1000).toFixed(intervalMs < 10_000 ? 1 : 0)} s`;
        if (area.live) area.update(`terminal-agent status at ${at.toTimeString().slice(0, 8)}, every ${every} (Ctrl-C to stop)\n\n${text}`);
        else writeLine(ctx, `--- ${at.toISOString()}\n${text}\n`);
      }
      wake = new AbortController();
      await withLinkedSignal([ctx.shutdown, wake.signal], (signal) => wait(intervalMs, signal));
    }
  } finally {
    stream?.close();
  }
  return 0;
}
