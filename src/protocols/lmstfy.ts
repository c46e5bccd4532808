/**
 * The lmstfy front door (docs/doors/lmstfy.md): Meitu's HTTP task queue on rq's pull queues.
 * One listener serves the API (`/api/...`) and the admin routes (`/token/...`,
 * `/info`, `/version`, `/pools`, which lmstfy serves on a listener of their own). It keeps no
 * queue state: an lmstfy queue `<namespace>/<queue>` is the rq queue
 * `<namespace>.<queue>`, every job is one rq message whose external id is the
 * job id (a ULID minted here), and every change is a PullClient call to the queue's
 * process, so a restart of the web process loses no job and no lease.
 *
 * Each /api request goes through lmstfy's checks in order: the names, the token's pool, the token
 * (unless the route is public or `auth` is false), then the route's own checks, in
 * lmstfy's order. Every reply carries `X-Request-ID: <fresh ULID>`.
 *
 * Config (`protocols.lmstfy` in config.json, beside `port` and `addr`):
 * - `tokens`: `{"<namespace>": ["<token>", ...]}`, tokens registered at start (so a
 *   client needs no admin call first); the admin routes add and remove more (lmstfy-tokens.ts). A
 *   namespace with a token is closed to the other front doors too (door-access.ts).
 * - `auth`: false skips the token check (the reference's `-sv` dev mode). @default true
 * - `accounts`: `{"<user>": "<password>"}`, HTTP Basic auth on the admin routes that show
 *   or change tokens (the reference's `Accounts`), and on `/metrics` and `GET /accesslog`
 *   (lmstfy-admin.ts). @default
 *   none: the token, limiter and access-log switch routes are off (403), unless `auth` is
 *   false, when they are open. `/version`, `/info` and `/pools` are always open: they
 *   show no token and nothing of any namespace.
 * - `access_log`: log every /api request from the start (lmstfy-access-log.ts). @default false
 *
 * After the token, the rate limit: publish and bulk publish take a unit of the token's `write`
 * limit, consume one of its `read` limit (lmstfy-limits.ts), or get a 429; one that then
 * fails hands it back. Publish, consume and ack are measured for `/metrics`
 * (lmstfy-metrics.ts), and every /api request goes to the access log when it is on.
 *
 * Before those checks, the browser rules of lib/http-listener.ts: a browser's request that does not
 * call this door by one of the install's host names is a 421, and one from another site's
 * page a 403, whatever its method.
 *
 * This file holds the routes and their gate; the /api handlers are lmstfy-api.ts's, the
 * admin routes lmstfy-admin.ts's.
 */
import type http from 'node:http';
import { ulid } from 'ulid';
import { restartHeaders } from '../client/call.js';
import { explain, RqError } from '../domain/errors.js';
import { browserHostNames } from '../domain/main-config.js';
import { browserRefusal, createHttpServer } from '../lib/http-listener.js';
import type { Logger } from '../lib/logger.js';
import { AccessLog, CLIENT_GONE } from './lmstfy-access-log.js';
import { LmstfyAdmin, type AdminState } from './lmstfy-admin.js';
import { LmstfyApi } from './lmstfy-api.js';
import type { LmstfyConfig } from './lmstfy-config.js';
import { LimitTable, type LimitKind } from './lmstfy-limits.js';
import { LmstfyMetrics, type Op } from './lmstfy-metrics.js';
import { DEFAULT_POOL, splitPool } from './lmstfy-tokens.js';
import { checkConsumeNames, checkNames, ERROR_REPLIES, fail, rqQueue, type Reply } from './lmstfy-wire.js';
import type { PullClient } from './pull-client.js';
import type { ProtocolContext } from './context.js';

const NOT_FOUND = fail(404, 'api not found');

/** The limit each limited route takes from; republish has none. */
const LIMITED: Partial<Record<Op, LimitKind>> = { publish: 'write', bulk_publish: 'write', consume: 'read' };
/** The success of a limited request: any other reply hands its unit back. */
const SUCCESS: Record<LimitKind, number> = { write: 201, read: 200 };

export function lmstfyServer(ctx: ProtocolContext): http.Server {
  const { config, tokens } = ctx.namespaces.lmstfy();
  const door = new LmstfyDoor(ctx.client, ctx.log, config, {
    tokens,
    limits: new LimitTable(ctx.root.configDir),
    metrics: new LmstfyMetrics(ctx.root, ctx.client),
    accessLog: new AccessLog(ctx.log, config.accessLog),
  });
  const hosts = browserHostNames(ctx.main, ctx.section.addr);
  // The head within 10 s and the whole request within 2 min; a blocking consume is past both.
  const timeouts = { headersTimeoutMs: 10_000, requestTimeoutMs: 120_000 };
  return createHttpServer((req, res) => {
    const refused = browserRefusal(req, hosts);
    if (refused === undefined) {
      void door.serve(req, res);
      return;
    }
    res.setHeader('X-Request-ID', ulid());
    send(res, fail(refused.status, refused.reason));
  }, timeouts);
}

/** A route: its handler, whether it skips the token check (lmstfy's public routes), and what it is for the limits and the metrics. */
interface ApiRoute {
  handle: () => Promise<Reply | undefined>;
  isPublic?: boolean;
  op?: Op;
}

class LmstfyDoor {
  private readonly log: Logger;
  private readonly config: LmstfyConfig;
  private readonly state: AdminState;
  private readonly handlers: LmstfyApi;
  private readonly admin: LmstfyAdmin;

  constructor(client: PullClient, log: Logger, config: LmstfyConfig, state: AdminState) {
    this.log = log;
    this.config = config;
    this.state = state;
    this.handlers = new LmstfyApi(client);
    this.admin = new LmstfyAdmin(config, state);
  }

  async serve(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const startedMs = performance.now();
    res.setHeader('X-Request-ID', ulid());
    const url = new URL(req.url ?? '/', 'http://lmstfy.invalid');
    const segs = url.pathname.split('/').slice(1).map(decodeSegment);
    const isApi = segs[0] === 'api';
    let reply: Reply | undefined;
    try {
      if (isApi) reply = await this.api(req, res, segs.slice(1), url.searchParams, startedMs);
      else reply = (await this.admin.serve(req, res, segs, url.searchParams)) ?? NOT_FOUND;
    } catch (e) {
      reply = this.errorReply(e, req);
    }
    if (reply) send(res, reply);
    if (isApi) this.state.accessLog.record(req, res, url.pathname, segs[1], reply?.status ?? CLIENT_GONE, startedMs);
  }

  // ---- /api ---------------------------------------------------------------------

  private async api(req: http.IncomingMessage, res: http.ServerResponse, segs: string[], query: URLSearchParams, startedMs: number): Promise<Reply | undefined> {
    const route = this.apiRoute(req, res, segs, query);
    if (!route) return NOT_FOUND;
    const [ns, q] = segs as [string, string];
    const names = route.op === 'consume' ? checkConsumeNames(ns, q) : checkNames(ns, q);
    if (names) return names;
    const given = headerText(req.headers['x-token']) || (query.get('token') ?? '');
    const { pool, token } = splitPool(given);
    if (pool !== DEFAULT_POOL) return fail(404, 'pool not found');
    if (!route.isPublic && this.config.auth) {
      if (token === '') return fail(401, 'token not found');
      if (!this.state.tokens.has(ns, token)) return fail(401, 'invalid token');
    }
    if (route.op === undefined) return route.handle();
    const reply = await this.limited(req, route.handle, ns, token, LIMITED[route.op]);
    this.state.metrics.observe(route.op, ns, q, reply, (performance.now() - startedMs) / 1000);
    return reply;
  }

  /**
   * The rate limit: a 429 when the token's `kind` limit has no unit left in its window, else
   * the handler's reply; one that is not the route's success hands its unit back.
   */
  private async limited(req: http.IncomingMessage, handle: ApiRoute['handle'], ns: string, token: string, kind: LimitKind | undefined): Promise<Reply | undefined> {
    if (kind === undefined) return this.replyOf(req, handle);
    const refund = this.state.limits.take(ns, token, kind);
    if (refund === 'limited') {
      return { status: 429, body: { msg: `token(${token}) ${kind === 'write' ? 'produce' : 'consume'} reach the limit rate, please retry later` } };
    }
    const reply = await this.replyOf(req, handle);
    if (reply?.status !== SUCCESS[kind]) refund();
    return reply;
  }

  /** The handler's reply, its error's reply when it throws. */
  private async replyOf(req: http.IncomingMessage, handle: ApiRoute['handle']): Promise<Reply | undefined> {
    try {
      return await handle();
    } catch (e) {
      return this.errorReply(e, req);
    }
  }

  /** The route of a method and path under /api (gin's table in the reference's route.go). */
  private apiRoute(req: http.IncomingMessage, res: http.ServerResponse, segs: string[], query: URLSearchParams): ApiRoute | undefined {
    const [ns, q, a, b] = segs;
    if (ns === undefined || q === undefined) return undefined;
    const m = req.method;
    const rq = rqQueue(ns, q);
    if (segs.length === 2) {
      if (m === 'PUT') return { op: 'publish', handle: () => this.handlers.publish(req, res, ns, q, query) };
      if (m === 'GET') return { op: 'consume', handle: () => this.handlers.consume(res, ns, q, query) };
      if (m === 'DELETE') return { handle: () => this.handlers.destroy(rq) };
    } else if (segs.length === 3) {
      if (a === 'bulk' && m === 'PUT') return { op: 'bulk_publish', handle: () => this.handlers.bulkPublish(req, res, ns, q, query) };
      if (a === 'peek' && m === 'GET') return { handle: () => this.handlers.peekHead(ns, q) };
      if (a === 'size' && m === 'GET') return { isPublic: true, handle: () => this.handlers.size(ns, q) };
      if (a === 'deadletter' && m === 'GET') return { handle: () => this.handlers.deadLetterInfo(ns, q) };
      if (a === 'deadletter' && m === 'PUT') return { handle: () => this.handlers.respawn(rq, query) };
      if (a === 'deadletter' && m === 'DELETE') return { handle: () => this.handlers.deleteDead(rq, query) };
    } else if (segs.length === 4 && b !== undefined) {
      if (a === 'job' && m === 'PUT') return { op: 'republish', handle: () => this.handlers.republish(req, res, ns, q, b, query) };
      if (a === 'job' && m === 'GET') return { handle: () => this.handlers.peekJob(ns, q, b) };
      if (a === 'job' && m === 'DELETE') return { op: 'ack', handle: () => this.handlers.ack(rq, b) };
      if (a === 'deadletter' && b === 'size' && m === 'GET') return { isPublic: true, handle: () => this.handlers.deadLetterSize(ns, q) };
    }
    return undefined;
  }

  private errorReply(e: unknown, req: http.IncomingMessage): Reply {
    // The path only: a query may carry `token=` (the logs are no place for a token).
    const where = { method: req.method, path: (req.url ?? '').split('?')[0] };
    if (e instanceof RqError) {
      const r = ERROR_REPLIES[e.code];
      if (r.status >= 500) this.log.error({ ...where, code: e.code, err: explain(e) }, 'lmstfy request failed');
      else this.log.debug({ ...where, code: e.code, err: e.message }, 'lmstfy request refused');
      const headers = restartHeaders(e);
      // A full disk says which: `no space left on device: queues/<q>`.
      return { ...fail(r.status, e.code === 'RQ_NO_SPACE' ? e.message : r.error), ...(headers ? { headers } : {}) };
    }
    this.log.error({ ...where, err: explain(e) }, 'lmstfy request failed');
    return fail(500, 'internal error');
  }
}

function send(res: http.ServerResponse, reply: Reply): void {
  if (res.headersSent || res.destroyed) return;
  const headers: Record<string, string | number> = { ...reply.headers };
  if (reply.close) headers['Connection'] = 'close';
  if ((reply.body === undefined && reply.raw === undefined) || reply.status === 204) {
    res.writeHead(reply.status, headers).end();
    return;
  }
  const text = reply.raw?.text ?? JSON.stringify(reply.body);
  headers['Content-Type'] = reply.raw?.type ?? 'application/json; charset=utf-8';
  headers['Content-Length'] = Buffer.byteLength(text);
  res.writeHead(reply.status, headers).end(text);
}

function decodeSegment(seg: string): string {
  try {
    return decodeURIComponent(seg);
  } catch {
    return seg;
  }
}

function headerText(v: string | string[] | undefined): string {
  return Array.isArray(v) ? (v[0] ?? '') : (v ?? '');
}
