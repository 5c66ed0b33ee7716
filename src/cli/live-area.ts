import type { Writable } from 'node:stream';
import type { CliContext } from './command.js';

// A few lines that redraw in place while long work runs (progress, a level meter, a status), on a
// terminal only: piped or with --json the command prints just its final lines, as before.
// log-update does the cursor work (erase the previous frame, wrap to the terminal width, count
// wide characters); it is loaded only when there is a terminal to draw on.

export interface LiveArea {
  /** False when stdout is not a terminal or --json was given: update() then does nothing. */
  readonly live: boolean;
  update(text: string): void;
  /** Erases the area; what is printed next takes its place. */
  clear(): void;
}

const NONE: LiveArea = { live: false, update() {}, clear() {} };

export function isTerminal(stream: Writable): boolean {
  return (stream as Writable & { isTTY?: boolean }).isTTY === true;
}

export async function openLiveArea(ctx: CliContext, json: boolean): Promise<LiveArea> {
  if (json || !isTerminal(ctx.io.stdout)) return NONE;
  const { createLogUpdate } = await import('log-update');
  // showCursor: log-update would otherwise hide the cursor and install exit handlers to show it
  // again; signals are main.ts's business.
  const draw = createLogUpdate(ctx.io.stdout as NodeJS.WriteStream, { showCursor: true });
  let last = '';
  return {
    live: true,
    update(text) {
      if (text === last) return;
      last = text;
      draw(text);
    },
    clear() {
      last = '';
      draw.clear();
    },
  };
}
