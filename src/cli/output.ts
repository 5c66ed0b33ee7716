import type { CliContext } from './command.js';
import { escapeControls } from '../util/terminal-text.js';

// Every human line goes out through writeLine/writeErr/writeTable, which escape control
// characters from outside (util/terminal-text.ts); writeJson writes exact JSON (which has none raw).

export function writeLine(ctx: CliContext, text = ''): void {
  put(ctx, 1, `${escapeControls(text, true)}\n`);
}

export function writeJson(ctx: CliContext, value: unknown): void {
  put(ctx, 1, `${JSON.stringify(value)}\n`);
}

/**
 * One JSON line on stderr (the error line of a failed --json command, a warning). Exact, as on
 * stdout: JSON.stringify already escapes C0 controls, and escaping the rest would write `\x9b`,
 * which is not JSON.
 */
export function writeJsonErr(ctx: CliContext, value: unknown): void {
  put(ctx, 2, `${JSON.stringify(value)}\n`);
}

export function writeErr(ctx: CliContext, text: string): void {
  put(ctx, 2, `${escapeControls(text, true)}\n`);
}

/**
 * A warning beside a command's result (records left out, a cache not used). For humans the text
 * on stderr; with --json one JSON line there, `{warning, code, ...details}`, the shape of
 * reportError's `{error, code, ...}` line: in --json mode every stderr line is a JSON object,
 * and stdout keeps the result's documented shape (`faces list --json` is a bare array).
 */
export function writeWarning(ctx: CliContext, json: boolean, warning: { text: string; code: string; details?: Record<string, unknown>; lines?: readonly string[] }): void {
  if (json) {
    writeJsonErr(ctx, { warning: warning.text, code: warning.code, ...warning.details });
    return;
  }
  writeErr(ctx, `warning: ${warning.text}`);
  for (const line of warning.lines ?? []) writeErr(ctx, line);
}

function put(ctx: CliContext, fd: 1 | 2, text: string): void {
  (fd === 1 ? ctx.io.stdout : ctx.io.stderr).write(text);
}

export interface Column<T> {
  header: string;
  value: (row: T) => unknown;
}

/** A plain aligned table for humans; `--json` output never goes through here. */
export function formatTable<T>(rows: readonly T[], columns: readonly Column<T>[]): string {
  const cells = rows.map((r) => columns.map((c) => cellText(c.value(r))));
  const widths = columns.map((c, i) => Math.max(c.header.length, ...cells.map((row) => row[i]!.length)));
  const line = (values: string[]) => values.map((v, i) => (i === values.length - 1 ? v : v.padEnd(widths[i]!))).join('  ').trimEnd();
  return [line(columns.map((c) => c.header.toUpperCase())), ...cells.map(line)].join('\n');
}

export function writeTable<T>(ctx: CliContext, rows: readonly T[], columns: readonly Column<T>[], empty = '(none)'): void {
  writeLine(ctx, rows.length === 0 ? empty : formatTable(rows, columns));
}

/** One line per cell: a line break or tab in a name is shown escaped, not obeyed. */
function cellText(v: unknown): string {
  if (v === undefined || v === null) return '-';
  if (typeof v === 'object') return JSON.stringify(v);
  return escapeControls(String(v));
}
