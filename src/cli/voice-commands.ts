import type { CommandSpec } from './command.js';

export const voiceCommands: CommandSpec[] = [];
