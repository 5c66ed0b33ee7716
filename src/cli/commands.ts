import type { CommandSpec } from './command.js';
import { configCommands } from './config-commands.js';
import { emulatorCommands } from './emulator-commands.js';
import { facesCommands } from './faces-commands.js';
import { knowledgeCommands } from './knowledge-commands.js';
import { voiceCommands } from './voice-commands.js';
import { speechCommands } from './speech-commands.js';
import { daemonCommands } from './daemon-commands.js';
import { consoleCommands } from './console-commands.js';

/** Every command of the product contract, in the order `--help` lists them. */
export const COMMANDS: readonly CommandSpec[] = [
  ...daemonCommands,
  ...emulatorCommands,
  ...configCommands,
  ...facesCommands,
  ...knowledgeCommands,
  ...speechCommands,
  ...voiceCommands,
  ...consoleCommands,
];
