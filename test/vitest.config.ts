import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    root: new URL('..', import.meta.url).pathname,
    include: ['test/**/*.test.ts'],
    exclude: ['test/bench/**', 'node_modules/**'],
    // Tests spawn real processes, emulators and ALSA devices: give them room, run files in parallel.
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
  },
});
