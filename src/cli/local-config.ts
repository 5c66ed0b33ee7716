import type { CliContext, ParsedArgs } from './command.js';
import type { AgentConfig } from '../config/schema.js';

// Apart from api-client.ts (which carries the image and name checks) so that `status` can fall back
// to the full config without loading what only the service commands use.

/** Loads the config for a command that only needs local settings (secrets not required). */
export async function loadLocalConfig(args: ParsedArgs, ctx: CliContext): Promise<AgentConfig> {
  const { loadConfig } = await import('../config/load-config.js');
  return loadConfig({ path: args.global.configPath, env: ctx.env, cwd: ctx.cwd, requireSecrets: false, blocking: true });
}
