import { describe, expect, it } from 'vitest';
import { startTestEmulator, terminalOf } from '../helpers/emulator.js';
import { call, form } from './http.js';

describe('emulator knowledge and notify', () => {
  it('adds entries from JSON and from multipart (text field or file part), replacing by id', async () => {
    const emu = await startTestEmulator();
    const token = emu.apiKey;
    const a = await call(`${emu.baseUrl}/knowledge`, 'POST', { token, json: { id: 'faq-1', title: 'Hours', content: 'Open 9-5' } });
    expect(a.status).toBe(200);
    expect(a.json()).toMatchObject({ code: 0, data: { id: 'faq-1' } });
    const b = await call(`${emu.baseUrl}/knowledge`, 'POST', { token, form: form({ id: 'faq-2', content: 'Parking at the back' }) });
    expect(b.status).toBe(200);
    const c = await call(`${emu.baseUrl}/knowledge`, 'POST', { token, form: form({ id: 'faq-3' }, { content: { data: Buffer.from('# Doc\nbody'), filename: 'faq-3.md', type: 'text/markdown' } }) });
    expect(c.status).toBe(200);
    const noId = await call(`${emu.baseUrl}/knowledge`, 'POST', { token, json: { content: 'anonymous' } });
    expect(noId.json().data.id).toMatch(/^kb_/);
    await call(`${emu.baseUrl}/knowledge`, 'POST', { token, json: { id: 'faq-1', title: 'Hours', content: 'Open 8-6' } });
    const entries = emu.state.knowledge();
    expect(entries.find((e) => e.id === 'faq-1')).toEqual({ id: 'faq-1', title: 'Hours', content: 'Open 8-6' });
    expect(entries.find((e) => e.id === 'faq-3')?.content).toBe('# Doc\nbody');
    expect(entries).toHaveLength(4);
  });

  it('refuses with 400 a missing content, bad JSON, or another content type', async () => {
    const emu = await startTestEmulator();
    const token = emu.apiKey;
    const cases = [
      await call(`${emu.baseUrl}/knowledge`, 'POST', { token, json: { id: 'x', title: 't' } }),
      await call(`${emu.baseUrl}/knowledge`, 'POST', { token, json: { content: '' } }),
      await call(`${emu.baseUrl}/knowledge`, 'POST', { token, json: { content: 42 } }),
      await call(`${emu.baseUrl}/knowledge`, 'POST', { token, rawBody: '{"content":', contentType: 'application/json' }),
      await call(`${emu.baseUrl}/knowledge`, 'POST', { token, form: form({ id: 'x' }) }),
      await call(`${emu.baseUrl}/knowledge`, 'POST', { token, rawBody: 'content=x', contentType: 'text/plain' }),
    ];
    for (const r of cases) {
      expect(r.status).toBe(400);
      expect(typeof r.json().message).toBe('string');
    }
    expect(emu.state.knowledge()).toEqual([]);
  });

  it('answers 401 without the API key or with a terminal secret, for POST and DELETE', async () => {
    const emu = await startTestEmulator();
    expect((await call(`${emu.baseUrl}/knowledge`, 'POST', { json: { content: 'x' } })).status).toBe(401);
    const wrong = await call(`${emu.baseUrl}/knowledge`, 'POST', { token: 'not-the-key-123', json: { content: 'x' } });
    expect(wrong.status).toBe(401);
    expect(wrong.body.toString()).not.toContain('not-the-key-123');
    expect((await call(`${emu.baseUrl}/knowledge`, 'POST', { token: terminalOf(emu).terminal_secret, json: { content: 'x' } })).status).toBe(401);
    expect((await call(`${emu.baseUrl}/knowledge/a`, 'DELETE', {})).status).toBe(401);
  });

  it('deletes an entry (200) and answers 404 for an unknown id', async () => {
    const emu = await startTestEmulator();
    await call(`${emu.baseUrl}/knowledge`, 'POST', { token: emu.apiKey, json: { id: 'doc 1', content: 'x' } });
    const del = await call(`${emu.baseUrl}/knowledge/${encodeURIComponent('doc 1')}`, 'DELETE', { token: emu.apiKey });
    expect(del.status).toBe(200);
    expect(emu.state.knowledge()).toEqual([]);
    const again = await call(`${emu.baseUrl}/knowledge/${encodeURIComponent('doc 1')}`, 'DELETE', { token: emu.apiKey });
    expect(again.status).toBe(404);
    expect(again.json().message).toMatch(/does not exist/);
  });

  it('notify endpoints answer {code:0,message}; agent_id is required; knowledge notify takes {} or nothing', async () => {
    const emu = await startTestEmulator();
    const ok = await call(`${emu.baseUrl}/agent/notify`, 'POST', { json: { agent_id: 'agent-7' } });
    expect(ok.status).toBe(200);
    expect(ok.json()).toEqual({ code: 0, message: expect.any(String) });
    expect((await call(`${emu.baseUrl}/agent/notify`, 'POST', { json: {} })).status).toBe(400);
    expect((await call(`${emu.baseUrl}/agent/notify`, 'POST', { json: { agent_id: 7 } })).status).toBe(400);
    expect((await call(`${emu.baseUrl}/agent/notify`, 'POST', { rawBody: 'nope', contentType: 'application/json' })).status).toBe(400);
    expect((await call(`${emu.baseUrl}/knowledge/notify`, 'POST', { json: {} })).json()).toEqual({ code: 0, message: expect.any(String) });
    expect((await call(`${emu.baseUrl}/knowledge/notify`, 'POST', { json: { changed: ['faq-1'] } })).status).toBe(200);
    expect((await call(`${emu.baseUrl}/knowledge/notify`, 'POST', { rawBody: '', contentType: 'application/json' })).status).toBe(200);
    expect((await call(`${emu.baseUrl}/knowledge/notify`, 'POST', { json: [1, 2] })).status).toBe(400);
    expect(emu.state.notifications().map((n) => [n.kind, n.body])).toEqual([
      ['agent', { agent_id: 'agent-7' }], ['knowledge', {}], ['knowledge', { changed: ['faq-1'] }], ['knowledge', {}],
    ]);
  });

  it('can demand a credential on the endpoints whose auth the spec does not show', async () => {
    const emu = await startTestEmulator({ otherAuth: 'api_key' });
    expect((await call(`${emu.baseUrl}/agent/notify`, 'POST', { json: { agent_id: 'a' } })).status).toBe(401);
    expect((await call(`${emu.baseUrl}/agent/notify`, 'POST', { token: emu.apiKey, json: { agent_id: 'a' } })).status).toBe(200);
    expect((await call(`${emu.baseUrl}/tts`, 'GET', {})).status).toBe(401);
  });

  it('answers 404 for an unknown path and 405 for a wrong method', async () => {
    const emu = await startTestEmulator();
    expect((await call(`${emu.baseUrl}/nope`, 'GET')).status).toBe(404);
    const wrong = await call(`${emu.baseUrl}/agent/notify`, 'GET');
    expect(wrong.status).toBe(405);
    expect(wrong.headers.allow).toBe('POST');
  });
});
