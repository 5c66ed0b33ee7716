import { stat } from 'node:fs/promises';
import type { DestinationStream } from 'pino';
import type { CliContext, ParsedArgs } from './command.js';
import type { AgentConfig } from '../config/schema.js';
import type { CallOptions, ServiceClient } from '../client/types.js';
import { userAgent } from '../version.js';
import { InvalidInputError, UsageError } from '../errors.js';
import { readHead, sniffMediaType, IMAGE_TYPES, type SniffedType } from '../client/media-types.js';
import { canonicalName, escapeName, nameProblem } from '../client/names.js';

// Shared by the commands that map to one API call: config -> client, the call options that make
// Ctrl-C cancel a call, and the local checks that turn bad input into exit 65 before any request.
// The config schema, the logger and the HTTP client are imported when a command asks for them:
// every command module imports this file, and `--help` must not pay for zod, pino or undici.

export interface ApiSession {
  config: AgentConfig;
  client: ServiceClient;
  /** Pass to every call: the shutdown signal cancels it. */
  call: CallOptions;
}

export { loadLocalConfig } from './local-config.js';

/**
 * A client for a CLI command. `requireSecrets: false` for commands that go through the daemon when
 * one runs (the client then fails only if a call really needs the missing secret).
 */
export async function clientFromConfig(args: ParsedArgs, ctx: CliContext, opts: { requireSecrets?: boolean } = {}): Promise<ApiSession> {
  const [{ loadConfig, configSecrets }, { createLogger }, { createServiceClient }] = await Promise.all([
    import('../config/load-config.js'),
    import('../log/logger.js'),
    import('../client/service-client.js'),
  ]);
  const config = await loadConfig({ path: args.global.configPath, env: ctx.env, cwd: ctx.cwd, requireSecrets: opts.requireSecrets ?? true, blocking: true });
  // Commands print their own results; the log only carries warnings (or debug when asked for).
  const level = config.log.level === 'debug' || config.log.level === 'trace' ? config.log.level : 'warn';
  const logger = createLogger({
    level,
    destination: ctx.io.stderr as unknown as DestinationStream,
    secrets: () => configSecrets(config),
  }).child({ component: 'cli' });
  const client = createServiceClient({
    config: config.service,
    logger: logger.child({ component: 'client' }),
    userAgent: userAgent(ctx.version),
    env: ctx.env,
  });
  return { config, client, call: { signal: ctx.shutdown } };
}

/** Runs `fn` with a client and always closes it. */
export async function withClient<T>(args: ParsedArgs, ctx: CliContext, fn: (s: ApiSession) => Promise<T>): Promise<T> {
  const session = await clientFromConfig(args, ctx);
  try {
    return await fn(session);
  } finally {
    await session.client.close();
  }
}

async function regularFile(path: string, what: string): Promise<number> {
  let size: number;
  try {
    const st = await stat(path);
    if (!st.isFile()) throw new InvalidInputError(`${what} ${path} is not a regular file`);
    size = st.size;
  } catch (err) {
    if (err instanceof InvalidInputError) throw err;
    throw new InvalidInputError(`${what} ${path} cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'}); check the path`, { cause: err });
  }
  if (size === 0) throw new InvalidInputError(`${what} ${path} is empty`);
  return size;
}

/** The image's real type from its bytes; exit 65 for anything but JPEG, PNG, BMP, WebP. */
export async function checkImageFile(path: string): Promise<SniffedType> {
  await regularFile(path, 'image');
  const type = sniffMediaType(await readHead(path, 64));
  if (!type || !IMAGE_TYPES.includes(type)) {
    throw new InvalidInputError(`${path} is not a JPEG, PNG, BMP or WebP image (checked its bytes, not its name); convert it first`, { details: { path } });
  }
  return type;
}

/**
 * Checks a --name before any request: what the service would not hold as given (client/names.ts),
 * and a byte limit (the service counts UTF-8 bytes). Returns the name as it will be sent (NFC).
 */
export function checkNameArg(raw: string | undefined, what: string, maxBytes?: number): string {
  if (raw === undefined) throw new UsageError(`${what} needs --name N`);
  if (raw.trim() === '') throw new InvalidInputError(`${what}: the name is empty`);
  const problem = nameProblem(raw, 'the name');
  if (problem) throw new InvalidInputError(`${what}: ${problem}`, { details: { field: 'name' } });
  const name = canonicalName(raw);
  const bytes = Buffer.byteLength(name, 'utf8');
  if (maxBytes !== undefined && bytes > maxBytes) {
    throw new InvalidInputError(`${what}: name "${escapeName(name)}" is ${bytes} bytes; the service allows at most ${maxBytes} bytes (UTF-8)`);
  }
  return name;
}

/** A whole number >= 0 from an option, or a usage error naming the option. */
export function intOption(value: string | undefined, option: string): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value)) throw new UsageError(`--${option} ${JSON.stringify(value)} is not a whole number >= 0`);
  return Number(value);
}
