import type { CommandSpec } from './command.js';

// Every command of the product contract, in the order `--help` lists them, by the module that
// defines it. Each group is imported only when asked for: the bundled CLI knows every command's
// words, options and help from its command index (command-index.ts) and imports one group, the
// one of the command it runs.

export interface CommandGroup {
  name: string;
  load(): Promise<readonly CommandSpec[]>;
}

export const COMMAND_GROUPS: readonly CommandGroup[] = [
  { name: 'daemon', load: async () => (await import('./daemon-commands.js')).daemonCommands },
  { name: 'emulator', load: async () => (await import('./emulator-commands.js')).emulatorCommands },
  { name: 'config', load: async () => (await import('./config-commands.js')).configCommands },
  { name: 'faces', load: async () => (await import('./faces-commands.js')).facesCommands },
  { name: 'knowledge', load: async () => (await import('./knowledge-commands.js')).knowledgeCommands },
  { name: 'speech', load: async () => (await import('./speech-commands.js')).speechCommands },
  { name: 'voice', load: async () => (await import('./voice-commands.js')).voiceCommands },
  { name: 'console', load: async () => (await import('./console-commands.js')).consoleCommands },
];

/** Every command, every group loaded (what the command index is made from). */
export async function loadAllCommands(): Promise<CommandSpec[]> {
  const groups = await Promise.all(COMMAND_GROUPS.map((g) => g.load()));
  return groups.flat();
}
