import type { Logger } from '../log/logger.js';

/** stderr lines of one child logged per minute, and the longest line logged. */
const STDERR_LINES_PER_MINUTE = 20;
const STDERR_LINE_MAX = 500;

/**
 * Forwards a child's stderr (ALSA's own complaints) to the log, one warn line per stderr line, so
 * an operator finds them in journalctl. Bounded: long lines are cut, and a child that keeps
 * printing (an underrun message per phrase, for months) is limited to a few lines a minute.
 */
export function stderrForwarder(log: Logger, pid: number | undefined): { push(s: string): void; flush(): void } {
  let partial = '';
  let windowStart = performance.now();
  let inWindow = 0;
  let suppressed = 0;
  const emit = (raw: string) => {
    const line = raw.trimEnd();
    if (!line.trim()) return;
    if (performance.now() - windowStart >= 60_000) {
      if (suppressed > 0) log.warn({ player_pid: pid, suppressed }, `player process stderr: ${suppressed} more line(s) not logged`);
      windowStart = performance.now();
      inWindow = 0;
      suppressed = 0;
    }
    if (inWindow >= STDERR_LINES_PER_MINUTE) {
      suppressed += 1;
      return;
    }
    inWindow += 1;
    log.warn({ player_pid: pid, stderr: line.length > STDERR_LINE_MAX ? `${line.slice(0, STDERR_LINE_MAX)}...` : line }, 'player process stderr');
  };
  return {
    push(s) {
      const lines = (partial + s).split('\n');
      partial = lines.pop() ?? '';
      for (const l of lines) emit(l);
      if (partial.length > STDERR_LINE_MAX * 8) {
        emit(partial);
        partial = '';
      }
    },
    flush() {
      emit(partial);
      partial = '';
      if (suppressed > 0) log.warn({ player_pid: pid, suppressed }, `player process stderr: ${suppressed} more line(s) not logged`);
      suppressed = 0;
    },
  };
}
