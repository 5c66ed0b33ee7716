'use strict';
/* eslint-disable @typescript-eslint/no-require-imports -- a CommonJS file by design: it stands in for undici's index.js */
// What terminal-agent uses of undici (src/client/proxy-transport.ts: EnvHttpProxyAgent, request;
// only when a proxy is configured, direct connections use node:http), required from undici's own
// files. The bundle (scripts/bundle.mjs) resolves `undici` here:
// undici's index.js also loads fetch, WebSocket, EventSource, the cache stores and the mocks, about
// half of its 710 KB, at every daemon start and for every CLI call that talks to the service.
// Only the bundle uses this file; tsc output and the tests load undici itself.
const Dispatcher = require('undici/lib/dispatcher/dispatcher');
const api = require('undici/lib/api');
const util = require('undici/lib/core/util');
const { InvalidArgumentError } = require('undici/lib/core/errors');
const { getGlobalDispatcher } = require('undici/lib/global');

// As undici's index.js does: dispatcher.request() and friends.
Object.assign(Dispatcher.prototype, api);

// undici's index.js makeDispatcher(api.request), the top-level request(url, opts).
function request(url, opts, handler) {
  if (typeof opts === 'function') {
    handler = opts;
    opts = null;
  }
  if (!url || (typeof url !== 'string' && typeof url !== 'object' && !(url instanceof URL))) {
    throw new InvalidArgumentError('invalid url');
  }
  if (opts != null && typeof opts !== 'object') throw new InvalidArgumentError('invalid opts');
  if (opts && opts.path != null) {
    if (typeof opts.path !== 'string') throw new InvalidArgumentError('invalid opts.path');
    const path = opts.path.startsWith('/') ? opts.path : `/${opts.path}`;
    url = new URL(util.parseOrigin(url).origin + path);
  } else {
    if (!opts) opts = typeof url === 'object' ? url : {};
    url = util.parseURL(url);
  }
  const { agent, dispatcher = getGlobalDispatcher() } = opts;
  if (agent) throw new InvalidArgumentError('unsupported opts.agent. Did you mean opts.client?');
  return api.request.call(dispatcher, {
    ...opts,
    origin: url.origin,
    path: url.search ? `${url.pathname}${url.search}` : url.pathname,
    method: opts.method || (opts.body ? 'PUT' : 'GET'),
  }, handler);
}

module.exports = {
  EnvHttpProxyAgent: require('undici/lib/dispatcher/env-http-proxy-agent'),
  request,
};
