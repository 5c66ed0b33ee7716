import type { CommandSpec } from './command.js';

export const emulatorCommands: CommandSpec[] = [];
