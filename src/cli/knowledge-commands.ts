import { NotRegularFileError, openRegularFile } from '../util/safe-open.js';
import { resolve } from 'node:path';
import { readStdin, stringOpt, type CliContext, type CommandSpec } from './command.js';
import { writeJson, writeLine } from './output.js';
import { withClient } from './api-client.js';
import type { CodeResult } from '../client/types.js';
import { InvalidInputError, UsageError } from '../errors.js';

// `knowledge ...` and `notify ...`: one command object per API call.

const MAX_CONTENT_BYTES = 16 * 1024 * 1024;

async function readContent(arg: string, ctx: CliContext): Promise<string> {
  let bytes: Buffer;
  if (arg === '-') {
    bytes = await readStdin(ctx, MAX_CONTENT_BYTES, () => new InvalidInputError(`standard input is over ${MAX_CONTENT_BYTES} bytes; a knowledge entry is text`));
  } else {
    const path = resolve(ctx.cwd, arg);
    try {
      // Only a regular file, opened without blocking: a FIFO or /dev/zero would wait or never end.
      const { fh, st } = await openRegularFile(path);
      try {
        if (st.size > MAX_CONTENT_BYTES) throw new InvalidInputError(`${path} is over ${MAX_CONTENT_BYTES} bytes; a knowledge entry is text`);
        bytes = await fh.readFile();
      } finally {
        await fh.close();
      }
    } catch (err) {
      if (err instanceof InvalidInputError) throw err;
      if (err instanceof NotRegularFileError) throw new InvalidInputError(`${path} is ${err.what}, not a regular file; give a text file or - for standard input`, { cause: err });
      throw new InvalidInputError(`${path} cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'}); check the path`, { cause: err });
    }
    if (bytes.length > MAX_CONTENT_BYTES) throw new InvalidInputError(`${path} is over ${MAX_CONTENT_BYTES} bytes; a knowledge entry is text`);
  }
  const where = arg === '-' ? 'standard input' : arg;
  if (bytes.includes(0)) throw new InvalidInputError(`${where} holds binary data (NUL bytes); a knowledge entry is text`);
  const text = new TextDecoder('utf-8', { fatal: false }).decode(bytes);
  if (text.trim() === '') throw new InvalidInputError(`${where} is empty; a knowledge entry needs content`);
  return text;
}

function printCode(ctx: CliContext, json: boolean, what: string, result: CodeResult): void {
  if (json) writeJson(ctx, result);
  else writeLine(ctx, `${what}${result.message ? `: ${result.message}` : ''}`);
}

const knowledgeAdd: CommandSpec = {
  path: ['knowledge', 'add'],
  summary: 'add a knowledge entry from a text file (or - for standard input)',
  usage: '[--id ID] [--title T] FILE|-',
  options: {
    id: { type: 'string', description: 'the entry id (the service makes one when absent)', valueName: 'ID' },
    title: { type: 'string', description: 'the entry title', valueName: 'T' },
  },
  positionals: { min: 1, max: 1, names: ['FILE'] },
  run: async (args, ctx) => {
    const id = stringOpt(args, 'id');
    const title = stringOpt(args, 'title');
    if (id !== undefined && id.trim() === '') throw new UsageError('--id is empty');
    const content = await readContent(args.positionals[0]!, ctx);
    await withClient(args, ctx, async ({ client, call }) => {
      const response = await client.addKnowledge({ content, ...(id !== undefined ? { id } : {}), ...(title !== undefined ? { title } : {}) }, call);
      if (args.global.json) writeJson(ctx, { added: true, id: id ?? null, response });
      else writeLine(ctx, `added knowledge entry${id ? ` ${id}` : ''} (${Buffer.byteLength(content)} bytes)`);
    });
  },
};

const knowledgeDelete: CommandSpec = {
  path: ['knowledge', 'delete'],
  summary: 'delete a knowledge entry',
  usage: 'ID',
  positionals: { min: 1, max: 1, names: ['ID'] },
  run: (args, ctx) => withClient(args, ctx, async ({ client, call }) => {
    const id = args.positionals[0]!;
    const response = await client.deleteKnowledge(id, call);
    if (args.global.json) writeJson(ctx, { deleted: true, id, response });
    else writeLine(ctx, `deleted knowledge entry ${id}`);
  }),
};

const notifyAgent: CommandSpec = {
  path: ['notify', 'agent'],
  summary: 'tell the service that an agent changed',
  usage: 'AGENT_ID',
  positionals: { min: 1, max: 1, names: ['AGENT_ID'] },
  run: (args, ctx) => withClient(args, ctx, async ({ client, call }) => {
    const agentId = args.positionals[0]!;
    printCode(ctx, args.global.json, `notified agent ${agentId}`, await client.notifyAgent(agentId, call));
  }),
};

const notifyKnowledge: CommandSpec = {
  path: ['notify', 'knowledge'],
  summary: 'tell the service that the knowledge base changed (optional JSON object body)',
  usage: '[JSON]',
  positionals: { min: 0, max: 1, names: ['JSON'] },
  run: async (args, ctx) => {
    const raw = args.positionals[0];
    let body: Record<string, unknown> = {};
    if (raw !== undefined) {
      let parsed: unknown;
      try {
        parsed = JSON.parse(raw);
      } catch (err) {
        throw new UsageError(`the JSON argument does not parse (${(err as Error).message}); quote it, e.g. '{"reason":"edit"}'`);
      }
      if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new UsageError('the JSON argument must be an object, e.g. {}');
      body = parsed as Record<string, unknown>;
    }
    await withClient(args, ctx, async ({ client, call }) => {
      printCode(ctx, args.global.json, 'notified knowledge change', await client.notifyKnowledge(body, call));
    });
  },
};

export const knowledgeCommands: CommandSpec[] = [knowledgeAdd, knowledgeDelete, notifyAgent, notifyKnowledge];
