import { existsSync } from 'node:fs';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { put, readJson, startRig, waitFor } from './fixtures.js';

describe('knowledge/ mirror', () => {
  it('uploads new files as entry ID, re-uploads edits, deletes removed ones, and notifies once per burst', async () => {
    const rig = await startRig({ config: { enroll: { knowledge_debounce: 300 } } });
    const entries = () => Object.fromEntries(rig.emulator.state.knowledge().map((k) => [k.id, k.content]));
    await put(rig.dir, 'knowledge/faq.md', '# FAQ\nOpening hours: 9-17\n');
    await put(rig.dir, 'knowledge/menu.txt', 'soup, bread');
    await put(rig.dir, 'knowledge/rules.txt', 'no dogs');
    await waitFor('three entries', () => Object.keys(entries()).length === 3);
    await waitFor('one notify', () => rig.emulator.state.notifications().length === 1);
    expect(entries()).toEqual({ faq: '# FAQ\nOpening hours: 9-17\n', menu: 'soup, bread', rules: 'no dogs' });
    expect(readJson(join(rig.dir, 'done/knowledge/menu.json'))).toMatchObject({ id: 'menu', action: 'uploaded' });
    // The mirror keeps the files where the operator put them.
    expect(existsSync(join(rig.dir, 'knowledge/menu.txt'))).toBe(true);

    await writeFile(join(rig.dir, 'knowledge/menu.txt'), 'soup, bread, salad');
    await rm(join(rig.dir, 'knowledge/rules.txt'));
    await waitFor('edit and delete', () => entries().menu === 'soup, bread, salad' && !('rules' in entries()));
    await waitFor('second notify', () => rig.emulator.state.notifications().length === 2);
    expect(readJson(join(rig.dir, 'done/knowledge/rules.json'))).toMatchObject({ id: 'rules', action: 'deleted' });

    // A rescan of unchanged files uploads nothing.
    const posts = rig.emulator.requests.filter((r) => r.path === '/knowledge' && r.method === 'POST').length;
    await new Promise((r) => setTimeout(r, 1500));
    expect(rig.emulator.requests.filter((r) => r.path === '/knowledge' && r.method === 'POST')).toHaveLength(posts);
    expect(rig.emulator.state.notifications()).toHaveLength(2);
  });

  it('deletes entries whose files vanished while the agent was stopped, and pays a notify it owed', async () => {
    const rig = await startRig({ config: { enroll: { knowledge_debounce: 1500 } } });
    await put(rig.dir, 'knowledge/old.txt', 'old text');
    await waitFor('uploaded', () => rig.emulator.state.knowledge().length === 1);
    await rig.enrollment.stop();
    // Stopped inside the quiet period: the notify is owed, not sent.
    expect(rig.emulator.state.notifications()).toHaveLength(0);
    await rm(join(rig.dir, 'knowledge/old.txt'));
    await rig.restart();
    await waitFor('deleted', () => rig.emulator.state.knowledge().length === 0);
    await waitFor('notified', () => rig.emulator.state.notifications().length === 1);
    expect(rig.emulator.requests.filter((r) => r.method === 'DELETE')).toMatchObject([{ path: '/knowledge/old', status: 200 }]);
  });
});
