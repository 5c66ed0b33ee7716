import { vi } from 'vitest';

/**
 * Date.now, steppable: the wall clock set back or forward by NTP, in this process only (setting
 * the machine's clock would disturb everything else on it). Installed before the code under test
 * is made, since some of it keeps a reference to Date.now. vi.restoreAllMocks() takes it away.
 */
export function steppableWallClock(): { step(ms: number): void } {
  const wall = Date.now.bind(Date);
  let offset = 0;
  vi.spyOn(Date, 'now').mockImplementation(() => wall() + offset);
  return {
    step(ms) {
      offset += ms;
    },
  };
}
