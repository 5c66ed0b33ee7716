import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { Transform, pipeline, type Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { silentLogger } from '../log/logger.js';
import { InvalidInputError } from '../errors.js';
import { createAuth } from './auth.js';
import { CONTROL_PREFIX, controlRoutes } from './control-routes.js';
import { FACE_PREFIX, faceRoutes } from './faces-routes.js';
import { createFaultEngine } from './faults.js';
import { createRouter, errorReply, jsonReply, replyForError, type Reply, type RequestContext, type Route, type Router } from './http.js';
import { knowledgeRoutes } from './knowledge-routes.js';
import { speakerRoutes } from './speaker-routes.js';
import { createStore } from './store.js';
import { ttsRoutes } from './tts-routes.js';
import { voiceprintRoutes } from './voiceprint-routes.js';
import { writeReply } from './response-writer.js';
import type { Emulator, EmulatorOptions, RequestRecord, TerminalCredential } from './types.js';

// startEmulator: a real HTTP server (node:http) for every endpoint of service-api.md, with the
// request log and fault injection that tests and benchmarks rely on.

export function makeCredentials(opts: Pick<EmulatorOptions, 'terminals' | 'apiKey'>): { terminals: TerminalCredential[]; apiKey: string } {
  const terminals = opts.terminals && opts.terminals.length > 0
    ? opts.terminals.map((t) => ({ ...t }))
    : [{ terminal_secret: `ts_${randomBytes(16).toString('hex')}`, group_id: `group-${randomBytes(4).toString('hex')}` }];
  return { terminals, apiKey: opts.apiKey ?? `ak_${randomBytes(16).toString('hex')}` };
}

export async function startEmulator(opts: EmulatorOptions = {}): Promise<Emulator> {
  const logger = opts.logger ?? silentLogger();
  const { terminals, apiKey } = makeCredentials(opts);
  const maxUploadBytes = opts.maxUploadBytes ?? 100 * 1024 * 1024;
  const logLimit = opts.requestLogLimit ?? 100_000;
  const store = createStore({ ...(opts.dataDir ? { dataDir: opts.dataDir } : {}), trainMs: opts.trainMs ?? 3000 });
  const auth = createAuth(terminals, apiKey, opts.otherAuth ?? 'none');
  const faults = createFaultEngine({ ...(opts.faults ? { rules: opts.faults } : {}), ...(opts.chaos ? { chaos: opts.chaos } : {}) });
  const requests: RequestRecord[] = [];
  const closing = new AbortController();
  const settings = { validators: opts.validators ?? true };
  const configure = (next: Partial<typeof settings>) => Object.assign(settings, next.validators === undefined ? {} : { validators: next.validators });
  const setImage = (faceId: string, image: Buffer, o: { changeId?: boolean } = {}) => store.setImage(faceId, image, o.changeId === true);

  const serviceRouter = createRouter([
    ...faceRoutes({ store, auth, maxUploadBytes, validators: () => settings.validators }),
    ...knowledgeRoutes({ store, auth, maxUploadBytes }),
    ...ttsRoutes({ store, auth, engine: opts.tts ?? 'auto', logger }),
    ...speakerRoutes({ store, auth, maxUploadBytes }),
    ...voiceprintRoutes({ store, auth, maxUploadBytes }),
  ]);
  const controlRouter = createRouter(controlRoutes({
    faults,
    requests: () => requests,
    clearRequests: () => void requests.splice(0),
    settings: () => ({ ...settings }),
    configure: (next) => ({ ...configure(next) }),
    setImage,
  }));

  function context(req: IncomingMessage, url: URL, params: Record<string, string>, onBytes: (n: number) => void) {
    let body: Readable | undefined;
    const ctx: RequestContext & { bodyStarted(): Readable | undefined } = {
      req, method: req.method ?? 'GET', path: url.pathname, query: url.searchParams, params,
      body() {
        if (!body) {
          const counter = new Transform({ transform(chunk: Buffer, _e, cb) { onBytes(chunk.length); cb(null, chunk); } });
          body = pipeline(req, counter, () => {});
        }
        return body;
      },
      bodyStarted: () => body,
    };
    return ctx;
  }

  async function route(router: Router, ctx: RequestContext, fallbackStyle: 'faces' | 'code'): Promise<Reply> {
    const m = router.match(ctx.method, ctx.path);
    if (!m) return errorReply(fallbackStyle, 404, `no endpoint ${ctx.method} ${ctx.path}`);
    if ('allowed' in m) return errorReply(fallbackStyle, 405, `${ctx.method} is not allowed on ${ctx.path}`, { Allow: m.allowed.join(', ') });
    ctx.params = m.found.params;
    try {
      return await m.found.route.handler(ctx);
    } catch (err) {
      const { reply, unexpected } = replyForError(m.found.route.errorStyle, err);
      if (unexpected) logger.error({ err, method: ctx.method, path: ctx.path }, 'emulator endpoint failed');
      return reply;
    }
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let url: URL;
    try {
      url = new URL(req.url ?? '/', 'http://emulator.invalid');
    } catch {
      await writeReply(res, errorReply('code', 400, 'the request target is not a valid URL'), { onStatus: () => {} });
      return;
    }
    const method = (req.method ?? 'GET').toUpperCase();
    if (url.pathname === CONTROL_PREFIX || url.pathname.startsWith(`${CONTROL_PREFIX}/`)) {
      const ctx = context(req, url, {}, () => {});
      await writeReply(res, await route(controlRouter, ctx, 'code'), { onStatus: () => {} });
      return;
    }
    const started = performance.now();
    const entry: RequestRecord = {
      method, path: url.pathname, query: Object.fromEntries(url.searchParams), status: 0, bytes: 0, bytesOut: 0, at: Date.now(),
      durationMs: 0, contentType: req.headers['content-type'], userAgent: req.headers['user-agent'], auth: auth.classify(req),
    };
    requests.push(entry);
    if (requests.length > logLimit) requests.splice(0, requests.length - logLimit);
    const ctx = context(req, url, {}, (n) => { entry.bytes += n; });
    const style = url.pathname.startsWith(`${FACE_PREFIX}/`) ? 'faces' : 'code';
    const decision = faults.decide(method, url.pathname);
    if (decision.label) entry.fault = decision.label;
    const finish = () => {
      entry.durationMs = Math.round(performance.now() - started);
      logger.debug({ method, path: url.pathname, status: entry.status, ms: entry.durationMs, fault: entry.fault }, 'request');
    };
    if (decision.delayMs > 0) {
      try {
        await sleep(decision.delayMs, undefined, { signal: closing.signal });
      } catch {
        return;
      }
    }
    if (decision.action === 'drop') {
      req.socket.destroy();
      return finish();
    }
    let reply: Reply;
    if (decision.action === 'status') {
      const headers: Record<string, string> = decision.retryAfter !== undefined ? { 'Retry-After': String(decision.retryAfter) } : {};
      reply = errorReply(style, decision.status!, `injected fault: ${decision.status}`, headers);
    } else if (decision.action === 'json') {
      reply = jsonReply(200, style === 'faces' ? { return_code: 50001, return_message: 'injected fault: error body' } : { code: 50001, message: 'injected fault: error body' });
    } else {
      reply = await route(serviceRouter, ctx, style);
    }
    if (decision.action === 'drop-after') {
      req.socket.destroy();
      return finish();
    }
    const cut = decision.action === 'drop-body' || decision.action === 'truncate' ? decision.action : undefined;
    entry.bytesOut = await writeReply(res, reply, {
      ...(cut ? { cut } : {}),
      ...(decision.slowBytesPerSec ? { slowBytesPerSec: decision.slowBytesPerSec } : {}),
      onStatus: (s) => { entry.status = s; },
    });
    // A body the endpoint did not read must still be drained, or the keep-alive connection stalls.
    const started2 = ctx.bodyStarted();
    if (started2 && !started2.readableEnded) started2.resume();
    finish();
  }

  const server = createServer({ keepAliveTimeout: 5000, requestTimeout: 0 }, (req, res) => {
    handle(req, res).catch((err: unknown) => {
      logger.error({ err }, 'emulator request failed');
      if (!res.headersSent) {
        res.writeHead(500, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify({ code: 500, message: 'internal server error' }));
      } else res.destroy();
    });
  });
  const host = opts.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  }).catch((err: unknown) => {
    store.close();
    throw err;
  });
  const port = (server.address() as AddressInfo).port;
  const urlHost = host.includes(':') ? `[${host}]` : host === '0.0.0.0' ? '127.0.0.1' : host;
  const baseUrl = `http://${urlHost}:${port}`;
  let closed: Promise<void> | undefined;

  return {
    baseUrl,
    faceBaseUrl: `${baseUrl}${FACE_PREFIX}`,
    host,
    port,
    terminals,
    apiKey,
    requests,
    clearRequests: () => void requests.splice(0),
    faults,
    state: store.state,
    seedFaces: (groupId, faces) => store.seedFaces(groupId, faces),
    setImage(faceId, image, o) {
      const face = setImage(faceId, image, o);
      if (!face) throw new InvalidInputError(`setImage: no face ${faceId}`);
      return face;
    },
    settings: () => ({ ...settings }),
    configure: (next) => ({ ...configure(next) }),
    close() {
      closed ??= (async () => {
        closing.abort();
        const done = new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeAllConnections();
        await done;
        store.close();
      })();
      return closed;
    },
  };
}

export type { Route };
