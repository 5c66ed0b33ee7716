import type { CommandSpec } from './command.js';

export const daemonCommands: CommandSpec[] = [];
