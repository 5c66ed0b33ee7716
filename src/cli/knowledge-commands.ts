import type { CommandSpec } from './command.js';

export const knowledgeCommands: CommandSpec[] = [];
