import type { CommandSpec } from './command.js';

export const facesCommands: CommandSpec[] = [];
