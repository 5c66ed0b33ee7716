import type { CommandSpec } from './command.js';

export const speechCommands: CommandSpec[] = [];
