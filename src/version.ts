import { readFileSync } from 'node:fs';

/** Written in by the bundle (scripts/bundle.mjs); undefined in a plain tsc build. */
declare const __TA_PACKAGE_VERSION__: string | undefined;

/** The package version: the bundle's, else read from package.json next to dist/ or src/. */
export function packageVersion(): string {
  // Every command prints or sends it: the bundle has it built in rather than read a file (with
  // the URL of this module to find it) on each start.
  if (typeof __TA_PACKAGE_VERSION__ === 'string') return __TA_PACKAGE_VERSION__;
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };
  return pkg.version;
}

export function userAgent(version = packageVersion()): string {
  return `terminal-agent/${version}`;
}
