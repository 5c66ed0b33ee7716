import { describe, expect, it } from 'vitest';
import { startTestEmulator, terminalOf } from '../helpers/emulator.js';
import { bmpImage, jpegImage, pngImage, webpImage } from './fixtures.js';
import { call, form } from './http.js';

const HEX32 = /^[0-9a-f]{32}$/;

async function addFace(base: string, token: string, name: string, data: Buffer, filename = 'face.jpg', type = 'image/jpeg') {
  return call(`${base}/faces`, 'POST', { token, form: form({ name }, { image: { data, filename, type } }) });
}

describe('emulator faces', () => {
  it('creates faces with generated 32-hex ids and increasing numeric ids, listed for the group', async () => {
    const emu = await startTestEmulator();
    const { terminal_secret: token, group_id } = terminalOf(emu);
    const a = await addFace(emu.faceBaseUrl, token, 'Ada', jpegImage());
    expect(a.status).toBe(200);
    expect(a.json()).toEqual({ return_code: 0, return_message: expect.any(String) });
    await addFace(emu.faceBaseUrl, token, 'Bob', pngImage(), 'bob.png', 'image/png');
    const list = await call(`${emu.faceBaseUrl}/faces`, 'GET', { token });
    expect(list.status).toBe(200);
    const faces = list.json() as { face_id: string; group_id: string; id: number; name: string }[];
    expect(faces.map((f) => f.name)).toEqual(['Ada', 'Bob']);
    for (const f of faces) {
      expect(f.face_id).toMatch(HEX32);
      expect(f.group_id).toBe(group_id);
      expect(Object.keys(f).sort()).toEqual(['face_id', 'group_id', 'id', 'name']);
    }
    expect(faces[1]!.id).toBeGreaterThan(faces[0]!.id);
    expect(new Set(faces.map((f) => f.face_id)).size).toBe(2);
    const one = await call(`${emu.faceBaseUrl}/faces/${faces[0]!.face_id}`, 'GET', { token });
    expect(one.json()).toEqual(faces[0]);
  });

  it('accepts JPEG, PNG, BMP and WebP by their bytes, whatever the file name', async () => {
    const emu = await startTestEmulator();
    const token = terminalOf(emu).terminal_secret;
    const cases = [
      [jpegImage(), 'image/jpeg'], [pngImage(), 'image/png'], [bmpImage(), 'image/bmp'], [webpImage(), 'image/webp'],
    ] as const;
    for (const [data, mime] of cases) {
      // The file name lies on purpose: the bytes decide.
      expect((await addFace(emu.faceBaseUrl, token, mime, data, 'x.txt', 'application/octet-stream')).status).toBe(200);
    }
    const faces = emu.state.faces();
    for (const [i, [data, mime]] of cases.entries()) {
      const img = await call(`${emu.faceBaseUrl}/faces/${faces[i]!.face_id}/image`, 'GET', { token });
      expect(img.status).toBe(200);
      expect(img.headers['content-type']).toBe(mime);
      expect(img.body.equals(data)).toBe(true);
    }
  });

  it('refuses with 400 a missing name, a missing image, an image that is not an image, and non-multipart bodies', async () => {
    const emu = await startTestEmulator();
    const token = terminalOf(emu).terminal_secret;
    const noName = await call(`${emu.faceBaseUrl}/faces`, 'POST', { token, form: form({}, { image: { data: jpegImage(), filename: 'a.jpg', type: 'image/jpeg' } }) });
    expect(noName.status).toBe(400);
    expect(noName.json().return_message).toMatch(/name/);
    const noImage = await call(`${emu.faceBaseUrl}/faces`, 'POST', { token, form: form({ name: 'Ada' }) });
    expect(noImage.status).toBe(400);
    expect(noImage.json().return_message).toMatch(/image/);
    const fake = await addFace(emu.faceBaseUrl, token, 'Ada', Buffer.from('this is text, not a JPEG at all'), 'ada.jpg');
    expect(fake.status).toBe(400);
    expect(fake.json().return_message).toMatch(/not a JPEG, PNG, BMP or WebP/);
    const gif = await addFace(emu.faceBaseUrl, token, 'Ada', Buffer.from('GIF89a\x01\x00\x01\x00\x00\x00\x00;', 'latin1'), 'ada.gif', 'image/gif');
    expect(gif.status).toBe(400);
    const json = await call(`${emu.faceBaseUrl}/faces`, 'POST', { token, json: { name: 'Ada' } });
    expect(json.status).toBe(400);
    const textImage = await call(`${emu.faceBaseUrl}/faces`, 'POST', { token, form: form({ name: 'Ada', image: 'not a file' }) });
    expect(textImage.status).toBe(400);
    const extra = await call(`${emu.faceBaseUrl}/faces`, 'POST', {
      token, form: form({ name: 'Ada', face_id: '0'.repeat(32) }, { image: { data: jpegImage(), filename: 'a.jpg', type: 'image/jpeg' } }),
    });
    expect(extra.status).toBe(400);
    expect(emu.state.faces()).toEqual([]);
  });

  it('answers 401 for a missing or wrong terminal secret and does not echo it', async () => {
    const emu = await startTestEmulator();
    const none = await call(`${emu.faceBaseUrl}/faces`, 'GET');
    expect(none.status).toBe(401);
    const wrong = await call(`${emu.faceBaseUrl}/faces`, 'GET', { token: 'wrong-secret-value' });
    expect(wrong.status).toBe(401);
    expect(wrong.body.toString()).not.toContain('wrong-secret-value');
    expect((await call(`${emu.faceBaseUrl}/faces`, 'GET', { token: emu.apiKey })).status).toBe(401);
    const post = await addFace(emu.faceBaseUrl, 'nope', 'Ada', jpegImage());
    expect(post.status).toBe(401);
    expect(emu.state.faces()).toEqual([]);
  });

  it('scopes faces to the group of the terminal: another group sees 404', async () => {
    const emu = await startTestEmulator({
      terminals: [{ terminal_secret: 'secret-one-111111', group_id: 'g1' }, { terminal_secret: 'secret-two-222222', group_id: 'g2' }],
    });
    await addFace(emu.faceBaseUrl, 'secret-one-111111', 'Ada', jpegImage());
    const [ada] = emu.state.faces('g1');
    const id = ada!.face_id;
    expect((await call(`${emu.faceBaseUrl}/faces`, 'GET', { token: 'secret-two-222222' })).json()).toEqual([]);
    for (const [method, path] of [['GET', ''], ['GET', '/image'], ['DELETE', '']] as const) {
      expect((await call(`${emu.faceBaseUrl}/faces/${id}${path}`, method, { token: 'secret-two-222222' })).status).toBe(404);
    }
    const put = await call(`${emu.faceBaseUrl}/faces/${id}`, 'PUT', { token: 'secret-two-222222', form: form({ name: 'Eve' }) });
    expect(put.status).toBe(404);
    expect(emu.state.face(id)?.name).toBe('Ada');
    expect((await call(`${emu.faceBaseUrl}/faces/${'f'.repeat(32)}`, 'GET', { token: 'secret-one-111111' })).status).toBe(404);
    expect((await call(`${emu.faceBaseUrl}/faces/not-hex`, 'GET', { token: 'secret-one-111111' })).status).toBe(404);
  });

  it('updates the name alone or name and image; 400 without a name', async () => {
    const emu = await startTestEmulator();
    const token = terminalOf(emu).terminal_secret;
    await addFace(emu.faceBaseUrl, token, 'Ada', jpegImage());
    const id = emu.state.faces()[0]!.face_id;
    const rename = await call(`${emu.faceBaseUrl}/faces/${id}`, 'PUT', { token, form: form({ name: 'Ada L.' }) });
    expect(rename.status).toBe(200);
    expect(rename.json()).toMatchObject({ return_code: 0 });
    expect(emu.state.face(id)).toMatchObject({ name: 'Ada L.', mime: 'image/jpeg' });
    const reimage = await call(`${emu.faceBaseUrl}/faces/${id}`, 'PUT', { token, form: form({ name: 'Ada' }, { image: { data: pngImage(), filename: 'a.png', type: 'image/png' } }) });
    expect(reimage.status).toBe(200);
    expect(emu.state.face(id)).toMatchObject({ name: 'Ada', mime: 'image/png' });
    expect(emu.state.faceImage(id)!.equals(pngImage())).toBe(true);
    const noName = await call(`${emu.faceBaseUrl}/faces/${id}`, 'PUT', { token, form: form({}, { image: { data: pngImage(), filename: 'a.png', type: 'image/png' } }) });
    expect(noName.status).toBe(400);
    const badImage = await call(`${emu.faceBaseUrl}/faces/${id}`, 'PUT', { token, form: form({ name: 'X' }, { image: { data: Buffer.from('nope'), filename: 'a.png', type: 'image/png' } }) });
    expect(badImage.status).toBe(400);
    expect(emu.state.face(id)?.name).toBe('Ada');
  });

  it('deletes with 204 and no body; the face is then 404', async () => {
    const emu = await startTestEmulator();
    const token = terminalOf(emu).terminal_secret;
    await addFace(emu.faceBaseUrl, token, 'Ada', jpegImage());
    const id = emu.state.faces()[0]!.face_id;
    const del = await call(`${emu.faceBaseUrl}/faces/${id}`, 'DELETE', { token });
    expect(del.status).toBe(204);
    expect(del.body.length).toBe(0);
    expect((await call(`${emu.faceBaseUrl}/faces/${id}`, 'GET', { token })).status).toBe(404);
    expect((await call(`${emu.faceBaseUrl}/faces/${id}`, 'DELETE', { token })).status).toBe(404);
    await addFace(emu.faceBaseUrl, token, 'Bob', jpegImage());
    // Numeric ids never go back, even after a delete.
    expect(emu.state.faces()[0]!.id).toBeGreaterThan(1);
  });

  it('serves the image with an ETag and answers 304 to If-None-Match; a new image changes the ETag', async () => {
    const emu = await startTestEmulator();
    const token = terminalOf(emu).terminal_secret;
    await addFace(emu.faceBaseUrl, token, 'Ada', jpegImage());
    const id = emu.state.faces()[0]!.face_id;
    const url = `${emu.faceBaseUrl}/faces/${id}/image`;
    const first = await call(url, 'GET', { token });
    const etag = first.headers.etag as string;
    expect(etag).toMatch(/^"[0-9a-f]{64}"$/);
    expect(first.headers['content-length']).toBe(String(jpegImage().length));
    const again = await call(url, 'GET', { token, headers: { 'if-none-match': etag } });
    expect(again.status).toBe(304);
    expect(again.body.length).toBe(0);
    const since = await call(url, 'GET', { token, headers: { 'if-modified-since': first.headers['last-modified'] as string } });
    expect(since.status).toBe(304);
    await call(`${emu.faceBaseUrl}/faces/${id}`, 'PUT', { token, form: form({ name: 'Ada' }, { image: { data: pngImage(), filename: 'a.png', type: 'image/png' } }) });
    const changed = await call(url, 'GET', { token, headers: { 'if-none-match': etag } });
    expect(changed.status).toBe(200);
    expect(changed.headers.etag).not.toBe(etag);
    expect(changed.headers['content-type']).toBe('image/png');
  });

  it('with validators off (a setting, changed at run time) sends no ETag or Last-Modified and answers conditional requests in full', async () => {
    const emu = await startTestEmulator({ validators: false });
    const token = terminalOf(emu).terminal_secret;
    await addFace(emu.faceBaseUrl, token, 'Ada', jpegImage());
    const url = `${emu.faceBaseUrl}/faces/${emu.state.faces()[0]!.face_id}/image`;
    const first = await call(url, 'GET', { token });
    expect(first.status).toBe(200);
    expect(first.headers.etag).toBeUndefined();
    expect(first.headers['last-modified']).toBeUndefined();
    const again = await call(url, 'GET', { token, headers: { 'if-none-match': '*', 'if-modified-since': new Date().toUTCString() } });
    expect(again.status).toBe(200);
    expect(again.body.equals(jpegImage())).toBe(true);

    const control = `${emu.baseUrl}/__emulator/settings`;
    expect((await call(control, 'GET')).json()).toEqual({ validators: false });
    expect((await call(control, 'PUT', { json: { validators: 'yes' } })).status).toBe(400);
    expect((await call(control, 'PUT', { json: { validators: true } })).json()).toEqual({ validators: true });
    const tagged = await call(url, 'GET', { token });
    expect(tagged.headers.etag).toMatch(/^"[0-9a-f]{64}"$/);
    expect((await call(url, 'GET', { token, headers: { 'if-none-match': tagged.headers.etag as string } })).status).toBe(304);
  });

  it('set_image replaces an image as an administrator would: the same id by default, a new id (above every other) with change_id', async () => {
    const emu = await startTestEmulator();
    const { terminal_secret: token, group_id } = terminalOf(emu);
    const [ada, bob] = emu.seedFaces(group_id, [{ name: 'Ada', image: jpegImage() }, { name: 'Bob', image: jpegImage() }]);
    const url = (id: string) => `${emu.faceBaseUrl}/faces/${id}/image`;
    const etag = (await call(url(ada!.face_id), 'GET', { token })).headers.etag as string;
    const red = pngImage(2, 2, [255, 0, 0]);
    const same = await call(`${emu.baseUrl}/__emulator/set_image`, 'POST', { json: { face_id: ada!.face_id, image_base64: red.toString('base64') } });
    expect(same.json()).toEqual(ada);
    const changed = await call(url(ada!.face_id), 'GET', { token, headers: { 'if-none-match': etag } });
    expect(changed.status).toBe(200);
    expect(changed.body.equals(red)).toBe(true);

    const blue = pngImage(2, 2, [0, 0, 255]);
    const renumbered = emu.setImage(bob!.face_id, blue, { changeId: true });
    expect(renumbered).toMatchObject({ face_id: bob!.face_id, name: 'Bob' });
    expect(renumbered.id).toBeGreaterThan(bob!.id);
    expect(emu.state.faceImage(bob!.face_id)!.equals(blue)).toBe(true);
    // A face created afterwards gets an id of its own, not the one set_image gave.
    await addFace(emu.faceBaseUrl, token, 'Cy', jpegImage());
    const ids = emu.state.faces().map((f) => f.id);
    expect(new Set(ids).size).toBe(3);
    expect(Math.max(...ids)).toBeGreaterThan(renumbered.id);

    expect((await call(`${emu.baseUrl}/__emulator/set_image`, 'POST', { json: { face_id: 'f'.repeat(32), image_base64: red.toString('base64') } })).status).toBe(404);
    expect((await call(`${emu.baseUrl}/__emulator/set_image`, 'POST', { json: { face_id: ada!.face_id, image_base64: 'bm90IGFuIGltYWdl' } })).status).toBe(400);
  });

  it('answers 413 for an image over the upload limit and keeps nothing', async () => {
    const emu = await startTestEmulator({ maxUploadBytes: 1024 });
    const token = terminalOf(emu).terminal_secret;
    const big = Buffer.concat([jpegImage(), Buffer.alloc(4096)]);
    const r = await addFace(emu.faceBaseUrl, token, 'Big', big);
    expect(r.status).toBe(413);
    expect(r.json().return_message).toMatch(/over 1024 bytes/);
    expect(emu.state.faces()).toEqual([]);
    expect((await addFace(emu.faceBaseUrl, token, 'Small', jpegImage())).status).toBe(200);
  });

  it('seeds 10,000 faces directly and lists them', async () => {
    const emu = await startTestEmulator();
    const { terminal_secret: token, group_id } = terminalOf(emu);
    const seeded = emu.seedFaces(group_id, Array.from({ length: 10_000 }, (_, i) => ({ name: `p${i}`, image: i % 2 ? jpegImage() : pngImage(2, 2, [i % 256, 0, 0]) })));
    expect(seeded).toHaveLength(10_000);
    const list = (await call(`${emu.faceBaseUrl}/faces`, 'GET', { token })).json() as unknown[];
    expect(list).toHaveLength(10_000);
    expect(() => emu.seedFaces(group_id, [{ name: 'x', image: Buffer.from('not an image') }])).toThrow(/not a JPEG/);
  });
});
