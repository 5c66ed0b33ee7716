import { describe, expect, it } from 'vitest';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { DEFAULT_CONTROL_SOCKET, controlSocketOf, scanControlSocket } from '../../src/config/control-socket.js';
import { tmpDirManual } from '../helpers/tmp.js';

// `status` reads the control socket's path from the config file line by line when the file is
// plain `key: value` YAML, and lets the YAML library parse anything else. The scan must never
// disagree with YAML: it either gives YAML's answer or gives up.

/** control.socket as the YAML library reads it: a path, null (not set), or undefined (not a string). */
function yamlAnswer(text: string): string | null | undefined {
  const raw = parse(text) as { control?: { socket?: unknown } | null } | null;
  const socket = raw?.control?.socket;
  return socket === undefined || socket === null ? null : typeof socket === 'string' ? socket : undefined;
}

const EXAMPLE = readFileSync(new URL('../../config/config.example.yaml', import.meta.url), 'utf8');

const PLAIN: Record<string, string> = {
  'the example config': EXAMPLE,
  'a relative path': 'state_dir: /var/lib/x\ncontrol:\n  socket: run/ctl.sock\n',
  'a trailing comment': 'control:\n    # where\n    socket: /run/a.sock   # the socket\nlog:\n  level: info\n',
  'single quotes': "control:\n  socket: '/run/it''s.sock'\n",
  'double quotes': 'control:\n  socket: "/run/a b.sock"\n',
  'no control section': 'service:\n  base_url: https://x\n',
  'control without socket': 'control:\n  other: 1\nstate_dir: /x\n',
  'socket: ~': 'control:\n  socket: ~\n',
  'an empty control': 'control:\nstate_dir: /x\n',
  'socket under another section': 'service:\n  socket: /wrong.sock\ncontrol:\n  socket: /right.sock\n',
  'a path with dots, dashes and underscores': 'control:\n  socket: /run/ta-1/x_y.sock\n',
  'a path and a comment': 'control:\n  socket: /run/a.sock # here\n',
  'a key with dots and dashes': 'control:\n  a.b-c: 1\n  socket:    /x.sock\n',
  'a BOM': '\uFEFFcontrol:\n  socket: /bom.sock\n',
};

const TRICKY: Record<string, string> = {
  'flow mapping': 'control: {socket: /flow.sock}\n',
  'flow across lines': 'x: [\n  1]\ncontrol:\n  socket: /a.sock\n',
  'an anchor and alias': 'base: &b /a.sock\ncontrol:\n  socket: *b\n',
  'a merge key': 'defaults: &d\n  socket: /d.sock\ncontrol:\n  <<: *d\n',
  'a quoted key': '"control":\n  socket: /q.sock\n',
  'a block scalar': 'control:\n  socket: |\n    /b.sock\n',
  'a continued plain scalar': 'control:\n  socket: /run/a\n    b.sock\n',
  'a duplicate control': 'control:\n  socket: /a.sock\ncontrol:\n  socket: /b.sock\n',
  'a tag': 'control:\n  socket: !!str /t.sock\n',
  'a number': 'control:\n  socket: 12\n',
  'a boolean': 'control:\n  socket: true\n',
  'tabs': 'control:\n\tsocket: /t.sock\n',
  'two documents': '---\ncontrol:\n  socket: /a.sock\n---\ncontrol:\n  socket: /b.sock\n',
  'an escape in double quotes': 'control:\n  socket: "/run/\\x41.sock"\n',
  'a top-level sequence': '- control:\n    socket: /s.sock\n',
  'a line separator': 'control:\n  socket: /a\u2028b.sock\n',
  'a carriage return': 'control:\r\n  socket: /a.sock\r\n',
  'a directive': '%YAML 1.2\n---\ncontrol:\n  socket: /a.sock\n',
  'a value after the colon without a space': 'control:\n  socket:/a.sock\n',
};

describe('reading control.socket without the YAML library', () => {
  it.each(Object.entries(PLAIN))('%s: the scan gives what YAML gives', (_name, text) => {
    const scanned = scanControlSocket(text);
    expect(scanned).not.toBeUndefined();
    expect(scanned).toBe(yamlAnswer(text));
  });

  it.each(Object.entries(TRICKY))('%s: the scan gives up (YAML decides)', (_name, text) => {
    expect(scanControlSocket(text)).toBeUndefined();
  });

  it('controlSocketOf gives the same path both ways, resolved beside the config file', async () => {
    const dir = tmpDirManual('ta-ctlsock-');
    try {
      const cases: Array<[string, string | undefined]> = [
        ['control:\n  socket: run/ctl.sock\n', join(dir.dir, 'run/ctl.sock')],
        ['control: {socket: run/ctl.sock}\n', join(dir.dir, 'run/ctl.sock')],
        ['control:\n  socket: |\n    /b.sock\n', '/b.sock\n'], // as YAML reads it (load-config then rejects it)
        ['service:\n  x: 1\n', DEFAULT_CONTROL_SOCKET],
        ['control: {socket: 12}\n', undefined],
        ['control: [\n', undefined],
      ];
      for (const [text, expected] of cases) {
        const file = join(dir.dir, 'config.yaml');
        writeFileSync(file, text);
        const got = await controlSocketOf(file, '/');
        expect(got, text).toBe(expected);
      }
    } finally {
      dir.remove();
    }
  });
});
