import type { CommandSpec } from './command.js';

export const configCommands: CommandSpec[] = [];
