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
  const draw = createLogUpdate(sized(ctx.io.stdout as NodeJS.WriteStream), { showCursor: true });
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

/**
 * The terminal as log-update sees it, 80x24 where it reports no size: a serial console, or `script`
 * with no window, says 0x0, and log-update would then wrap at 0 columns and keep 0 rows (nothing
 * drawn at all). Read at each frame, so a window resized meanwhile is followed.
 */
function sized(out: NodeJS.WriteStream): NodeJS.WriteStream {
  return {
    get columns() {
      return out.columns || 80;
    },
    get rows() {
      return out.rows || 24;
    },
    isTTY: true,
    write: (text: string) => out.write(text),
  } as unknown as NodeJS.WriteStream;
}
