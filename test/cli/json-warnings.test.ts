import { describe, expect, it } from 'vitest';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCliProcess } from '../helpers/cli.js';
import { TEST_TERMINAL_SECRET } from '../helpers/config.js';
import { json, startHostileService } from '../helpers/hostile-service.js';
import { tmpDir } from '../helpers/tmp.js';

// With --json every line on stderr is a JSON object, so that a script can parse the stream line
// by line: a failed command's `{error, code, ...}`, and a warning beside a result
// `{warning, code, ...}` (records of the service's answer left out). stdout keeps its shape.

const ID = (n: number) => n.toString(16).padStart(32, '0');

function jsonLines(text: string): Array<Record<string, unknown>> {
  return text.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as Record<string, unknown>);
}

async function configFor(routes: Parameters<typeof startHostileService>[0]): Promise<{ config: string; dir: string }> {
  const svc = await startHostileService(routes);
  const dir = tmpDir('ta-json-warn-');
  const config = join(dir, 'config.yaml');
  writeFileSync(config, [
    'service:', `  base_url: ${svc.url}`, `  face_base_url: ${svc.faceBaseUrl}`, `  terminal_secret: "${TEST_TERMINAL_SECRET}"`, '  api_key: "k"', '  retries: 0',
    `state_dir: ${dir}`, 'control:', `  socket: ${join(dir, 'control.sock')}`, '',
  ].join('\n'));
  return { config, dir };
}

describe('warnings in --json mode', () => {
  it('faces list --json: the good records as the same array on stdout, the skipped ones as one JSON warning line', async () => {
    const listing = [{ face_id: ID(1), group_id: 'g', id: 1, name: 'alice' }, { face_id: ID(2), group_id: 'g', id: 2, name: null }, { face_id: 3, group_id: 'g', id: 3, name: 'x' }];
    const { config } = await configFor({ '/v1/api/faces': (_q, res) => json(res, listing) });
    const r = await runCliProcess(['faces', 'list', '--json', '--config', config]);
    expect(r.code).toBe(0);
    expect((JSON.parse(r.stdout) as Array<{ name: string }>).map((f) => f.name)).toEqual(['alice']);
    expect(jsonLines(r.stderr)).toEqual([{
      warning: "2 malformed record(s) in the service's answer were left out",
      code: 'TA_WARN_SKIPPED_RECORDS',
      skipped: 2,
      records: [
        { index: 1, reason: 'name_not_a_string', face_id: ID(2), message: `record 1 (face_id "${ID(2)}") has no string name` },
        { index: 2, reason: 'face_id_not_a_string', message: 'record 2 has no string face_id' },
      ],
    }]);
    // Without --json the same warning stays text for a person.
    const text = await runCliProcess(['faces', 'list', '--config', config]);
    expect(text.stderr).toBe(`warning: 2 malformed record(s) in the service's answer were left out:\n  skipped: record 1 (face_id "${ID(2)}") has no string name\n  skipped: record 2 has no string face_id\n`);
  });

  it('voices --json: the voices on stdout, how many were left out as one JSON warning line', async () => {
    const { config } = await configFor({
      '/tts': (_q, res) => json(res, { code: 0, data: { speakers: [{ name: 'Ada', voice: 'v-ada' }, null, { name: 7, voice: 'v-x' }], speakers_count: 3, total_speakers_count: 3 } }),
    });
    const r = await runCliProcess(['voices', '--json', '--config', config]);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ speakers: [{ name: 'Ada', voice: 'v-ada' }], speakers_count: 1, total_speakers_count: 3 });
    expect(jsonLines(r.stderr)).toEqual([{
      warning: "2 malformed voice record(s) in the service's answer were left out (not an object, or no string voice and name)",
      code: 'TA_WARN_SKIPPED_RECORDS',
      skipped: 2,
    }]);
  });

  it('the error line of a failed --json command stays JSON when the message holds a C1 control or a bidi override', async () => {
    const message = 'bad \u009b2J name \u202eevil';
    const { config } = await configFor({ '/v1/api/faces': (_q, res) => json(res, { code: 1, message }, 400) });
    const r = await runCliProcess(['faces', 'list', '--json', '--config', config]);
    expect(r.code).not.toBe(0);
    const [line, ...rest] = jsonLines(r.stderr);
    expect(rest).toEqual([]);
    expect(line!.code).toMatch(/^TA_ERR_/);
    expect(String(line!.error)).toContain(message);
  });

  it('an unknown command with --json is the JSON error line too', async () => {
    const r = await runCliProcess(['facez', 'list', '--json']);
    expect(r.code).toBe(64);
    expect(jsonLines(r.stderr)).toEqual([{ error: "unknown command 'facez list'; did you mean 'faces list'? (terminal-agent faces --help)", code: 'TA_ERR_USAGE' }]);
  });

  it('say --json without a daemon, its TTS cache unusable: a JSON warning line, then the JSON error line of the failed synthesis', async () => {
    const { config, dir } = await configFor({});
    mkdirSync(join(dir, 'agent.db')); // a folder where the cache database would be
    const r = await runCliProcess(['say', 'hello', '--json', '--config', config]);
    expect(r.code).not.toBe(0);
    const lines = jsonLines(r.stderr);
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatchObject({ code: 'TA_WARN_NO_TTS_CACHE' });
    expect(String(lines[0]!.warning)).toMatch(/^playing without the TTS cache: /);
    expect(String(lines[1]!.code)).toMatch(/^TA_ERR_/);
  });
});
