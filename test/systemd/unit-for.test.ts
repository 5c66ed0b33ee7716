import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { REPO_ROOT } from '../helpers/cli.js';

// systemd/unit-for.sh, which writes the unit systemd/install.sh installs: ExecStart= on the node
// found on PATH and the prefix, every other line as the checkout's unit has it.

const SCRIPT = join(REPO_ROOT, 'systemd', 'unit-for.sh');

describe('systemd/unit-for.sh', () => {
  it('points ExecStart= at this node and the prefix, with no node flag', () => {
    const unit = execFileSync(SCRIPT, [process.execPath, '/srv/ta'], { encoding: 'utf8' });
    expect(unit).not.toContain('/opt/terminal-agent');
    expect(/^ExecStart=(.*)$/m.exec(unit)![1]).toBe(`${process.execPath} /srv/ta/dist/main.js run --config /etc/terminal-agent/config.yaml`);
    expect(unit).toMatch(/^Environment=NODE_COMPILE_CACHE=\/var\/cache\/terminal-agent$/m);
  });
});
