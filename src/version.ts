import { readFileSync } from 'node:fs';

/** The package version, read once from package.json next to dist/ or src/. */
export function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };
  return pkg.version;
}

export function userAgent(version = packageVersion()): string {
  return `terminal-agent/${version}`;
}
