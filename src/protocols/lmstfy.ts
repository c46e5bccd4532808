/**
 * The lmstfy front door (spec/lmstfy.md): Meitu's HTTP task queue on rq's pull queues.
 * One listener serves the API (`/api/...`, §4) and the admin routes (`/token/...`,
 * `/info`, `/version`, `/pools`, §6 recommends them on the main listener). It keeps no
 * queue state: an lmstfy queue `<namespace>/<queue>` is the rq queue
 * `<namespace>.<queue>` (§11), every job is one rq message whose external id is the
 * job id (a ULID minted here), and every change is a PullClient call to the queue's
 * process, so a restart of the web process loses no job and no lease.
 *
 * Each /api request goes through §2 in order: the names, the token's pool, the token
 * (unless the route is public or `auth` is false), then the route's own checks, in the
 * order its table in the spec gives. Every reply carries `X-Request-ID: <fresh ULID>`.
 *
 * Config (`protocols.lmstfy` in config.json, beside `port` and `addr`):
 * - `tokens`: `{"<namespace>": ["<token>", ...]}`, tokens registered at start (§6's
 *   recommendation); the admin routes add and remove more (lmstfy-tokens.ts). A
 *   namespace with a token is closed to the other front doors too (door-access.ts).
 * - `auth`: false skips the token check (the reference's `-sv` dev mode). @default true
 * - `accounts`: `{"<user>": "<password>"}`, HTTP Basic auth on the admin routes marked †
 *   in §6 (the reference's `Accounts`). @default none: the token routes are off (403),
 *   unless `auth` is false, when they are open. `/version`, `/info` and `/pools` are
 *   always open: they show no token and nothing of any namespace.
 *
 * Before §2, the browser rules of lib/http-listener.ts: a browser's request that does not
 * call this door by one of the install's host names is a 421, and one from another site's
 * page a 403, whatever its method.
 *
 * Not served: the rate limits (`/token/:ns/:token/limit`, `/limits`, so no `429`),
 * `/metrics` and `/accesslog`; they answer `404 {"error":"api not found"}`.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { ulid } from 'ulid';
import { restartHeaders } from '../client/call.js';
import { explain, RqError } from '../domain/errors.js';
import { browserHostNames } from '../domain/main-config.js';
import { isProtocolQueueName, MAX_QUEUE_NAME } from '../domain/names.js';
import { abortableSleep } from '../lib/abortable-sleep.js';
import { browserRefusal, createHttpServer } from '../lib/http-listener.js';
import { PACKAGE_ROOT } from '../lib/install-root.js';
import type { Logger } from '../lib/logger.js';
import {
  checkConsumeNames,
  checkNames,
  ERROR_REPLIES,
  fail,
  isNamespace,
  isReply,
  jobIdOf,
  jobObject,
  jobRef,
  LIMITS,
  parseConsumeQuery,
  parsePublishQuery,
  queryInt,
  DEFAULTS,
  rqQueue,
  splitJsonArray,
  type PublishQuery,
  type Reply,
} from './lmstfy-wire.js';
import { DEFAULT_POOL, splitPool, type TokenTable } from './lmstfy-tokens.js';
import { readBody } from './http-body.js';
import type { PullClient, PulledJob } from './pull-client.js';
import type { ProtocolContext } from './context.js';
import type { LmstfyConfig } from './lmstfy-config.js';


/** A bulk body may hold 64 jobs of 65,535 bytes, plus room for separators and white space. */
const BULK_BODY_BYTES = 8 * 1024 * 1024;
/** An admin form body (description, token, pool). */
const FORM_BODY_BYTES = 64 * 1024;
/**
 * The longest consume wait, in ms: a uint32 `timeout` may ask for 136 years, but Node's
 * timers (here and in the queue process) hold at most 2^31−1 ms; past about 23 days the
 * consumer gets its 404 and asks again.
 */
const MAX_WAIT_MS = 2_000_000_000;
/** A respawn `ttl` beyond uint32 seconds (136 years) is taken as that. */
const MAX_RESPAWN_TTL_S = LIMITS.uint32;

const NOT_FOUND = fail(404, 'api not found');
const ADMIN_OFF = fail(403, 'the token routes are off: set "accounts" in protocols.lmstfy to use them (or "auth": false, for development only)');

export function lmstfyServer(ctx: ProtocolContext): http.Server {
  const { config, tokens } = ctx.namespaces.lmstfy();
  const door = new LmstfyDoor(ctx.client, ctx.log, config, tokens);
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

/** A route: its handler, and whether it skips the token check (§2 "public routes"). */
interface ApiRoute {
  handle: () => Promise<Reply | undefined>;
  isPublic?: boolean;
  isConsume?: boolean;
}

class LmstfyDoor {
  private readonly client: PullClient;
  private readonly log: Logger;
  private readonly config: LmstfyConfig;
  private readonly tokens: TokenTable;
  private readonly version: string;

  constructor(client: PullClient, log: Logger, config: LmstfyConfig, tokens: TokenTable) {
    this.client = client;
    this.log = log;
    this.config = config;
    this.tokens = tokens;
    this.version = packageVersion();
  }

  async serve(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    res.setHeader('X-Request-ID', ulid());
    let reply: Reply | undefined;
    try {
      reply = await this.route(req, res);
    } catch (e) {
      reply = this.errorReply(e, req);
    }
    if (reply) send(res, reply);
  }

  private route(req: http.IncomingMessage, res: http.ServerResponse): Promise<Reply | undefined> {
    const url = new URL(req.url ?? '/', 'http://lmstfy.invalid');
    const segs = url.pathname.split('/').slice(1).map(decodeSegment);
    if (segs[0] === 'api') return this.api(req, res, segs.slice(1), url.searchParams);
    return this.admin(req, res, segs, url.searchParams);
  }

  // ---- /api (§4) ----------------------------------------------------------------

  private async api(req: http.IncomingMessage, res: http.ServerResponse, segs: string[], query: URLSearchParams): Promise<Reply | undefined> {
    const route = this.apiRoute(req, res, segs, query);
    if (!route) return NOT_FOUND;
    const [ns, q] = segs as [string, string];
    const names = route.isConsume ? checkConsumeNames(ns, q) : checkNames(ns, q);
    if (names) return names;
    const given = headerText(req.headers['x-token']) || (query.get('token') ?? '');
    const { pool, token } = splitPool(given);
    if (pool !== DEFAULT_POOL) return fail(404, 'pool not found');
    if (!route.isPublic && this.config.auth) {
      if (token === '') return fail(401, 'token not found');
      if (!this.tokens.has(ns, token)) return fail(401, 'invalid token');
    }
    return route.handle();
  }

  /** The route of a method and path under /api (gin's table in the reference's route.go). */
  private apiRoute(req: http.IncomingMessage, res: http.ServerResponse, segs: string[], query: URLSearchParams): ApiRoute | undefined {
    const [ns, q, a, b] = segs;
    if (ns === undefined || q === undefined) return undefined;
    const m = req.method;
    const rq = rqQueue(ns, q);
    if (segs.length === 2) {
      if (m === 'PUT') return { handle: () => this.publish(req, res, ns, q, query) };
      if (m === 'GET') return { isConsume: true, handle: () => this.consume(res, ns, q, query) };
      if (m === 'DELETE') return { handle: () => this.destroy(rq) };
    } else if (segs.length === 3) {
      if (a === 'bulk' && m === 'PUT') return { handle: () => this.bulkPublish(req, res, ns, q, query) };
      if (a === 'peek' && m === 'GET') return { handle: () => this.peekHead(ns, q) };
      if (a === 'size' && m === 'GET') return { isPublic: true, handle: () => this.size(ns, q) };
      if (a === 'deadletter' && m === 'GET') return { handle: () => this.deadLetterInfo(ns, q) };
      if (a === 'deadletter' && m === 'PUT') return { handle: () => this.respawn(rq, query) };
      if (a === 'deadletter' && m === 'DELETE') return { handle: () => this.deleteDead(rq, query) };
    } else if (segs.length === 4 && b !== undefined) {
      if (a === 'job' && m === 'PUT') return { handle: () => this.republish(req, res, ns, q, b, query) };
      if (a === 'job' && m === 'GET') return { handle: () => this.peekJob(ns, q, b) };
      if (a === 'job' && m === 'DELETE') return { handle: () => this.ack(rq, b) };
      if (a === 'deadletter' && b === 'size' && m === 'GET') return { isPublic: true, handle: () => this.deadLetterSize(ns, q) };
    }
    return undefined;
  }

  /** §4.1 `PUT /api/:ns/:q?delay&ttl&tries`: publish the body as one job. */
  private async publish(req: http.IncomingMessage, res: http.ServerResponse, ns: string, q: string, query: URLSearchParams): Promise<Reply> {
    const job = await this.readJob(req, res, query);
    if (isReply(job)) return job;
    const jobId = await this.publishOne(rqQueue(ns, q), job.body, job.query);
    return { status: 201, body: { msg: 'published', job_id: jobId } };
  }

  /** §4.2 `PUT /api/:ns/:q/job/:id`: every check first, then acknowledge the old job and publish the body as a new one. */
  private async republish(req: http.IncomingMessage, res: http.ServerResponse, ns: string, q: string, oldId: string, query: URLSearchParams): Promise<Reply> {
    const job = await this.readJob(req, res, query);
    if (isReply(job)) return job;
    const rq = rqQueue(ns, q);
    await this.ackQuietly(rq, oldId);
    const jobId = await this.publishOne(rq, job.body, job.query);
    return { status: 201, body: { msg: 'published', job_id: jobId } };
  }

  /** The query and body checks of §4.1, in order. */
  private async readJob(req: http.IncomingMessage, res: http.ServerResponse, query: URLSearchParams): Promise<{ query: PublishQuery; body: Buffer } | Reply> {
    const parsed = parsePublishQuery(query);
    if (isReply(parsed)) return parsed;
    const body = await readBytes(req, res, LIMITS.jobBytes);
    return isReply(body) ? body : { query: parsed, body };
  }

  /** §4.3 `PUT /api/:ns/:q/bulk`: each element's raw JSON text is a job, published in order. */
  private async bulkPublish(req: http.IncomingMessage, res: http.ServerResponse, ns: string, q: string, query: URLSearchParams): Promise<Reply> {
    const parsed = parsePublishQuery(query);
    if (isReply(parsed)) return parsed;
    const body = await readBytes(req, res, BULK_BODY_BYTES);
    if (isReply(body)) return body;
    const jobs = splitJsonArray(body);
    if (!jobs) return fail(400, 'request body should be an array of objects');
    if (jobs.length === 0) return fail(400, 'no jobs');
    if (jobs.length > LIMITS.bulkJobs) return fail(400, 'too many jobs');
    if (jobs.some((j) => j.length > LIMITS.jobBytes)) return fail(413, 'job too large');
    const rq = rqQueue(ns, q);
    const ids: string[] = [];
    for (const job of jobs) ids.push(await this.publishOne(rq, job, parsed));
    return { status: 201, body: { msg: 'published', job_ids: ids } };
  }

  private async publishOne(rq: string, body: Buffer, p: PublishQuery): Promise<string> {
    const jobId = ulid();
    await this.client.publish(rq, {
      src: 'lmstfy',
      payload: body,
      ext_id: jobId,
      delay_ms: p.delayS * 1000,
      ...(p.ttlS > 0 ? { ttl_ms: p.ttlS * 1000 } : {}),
      tries: p.tries,
      requeue: 'tail',
    });
    return jobId;
  }

  /**
   * §4.4 `GET /api/:ns/:q1[,q2…]?ttr&timeout&count`. PullClient.lease does the picking
   * (listed order among ready jobs, then the first to arrive anywhere); a client that
   * goes away ends the wait, and a job leased for it in that instant is handed back.
   */
  private async consume(res: http.ServerResponse, ns: string, queuePart: string, query: URLSearchParams): Promise<Reply | undefined> {
    const c = parseConsumeQuery(query, queuePart);
    if (isReply(c)) return c;
    // A listed name whose rq queue cannot exist (too long) can never hold a job.
    const shownAs = new Map<string, string>();
    for (const q of c.queues) {
      const rq = rqQueue(ns, q);
      if (rq.length <= MAX_QUEUE_NAME && isProtocolQueueName(rq)) shownAs.set(rq, q);
    }
    const gone = new AbortController();
    res.once('close', () => {
      if (!res.writableFinished) gone.abort();
    });
    const waitMs = Math.min(c.timeoutS * 1000, MAX_WAIT_MS);
    let jobs: PulledJob[] = [];
    if (shownAs.size > 0) {
      jobs = await this.client.lease([...shownAs.keys()], {
        owner: 'lmstfy',
        ttr_ms: c.ttrS * 1000,
        count: c.count,
        wait_ms: waitMs,
        signal: gone.signal,
        create: c.timeoutS > 0,
      });
    } else {
      await abortableSleep(waitMs, gone.signal);
    }
    // The client went away (the client refunded what it had leased).
    if (gone.signal.aborted) return undefined;
    if (jobs.length === 0) return { status: 404, body: { msg: 'no job available' } };
    const now = Date.now();
    const shown = jobs.map((job) => ({ msg: 'new job', ...jobObject(job, ns, shownAs.get(job.queue) ?? job.queue.slice(ns.length + 1), now) }));
    return { status: 200, body: c.count === 1 ? shown[0] : shown };
  }

  /** §4.5 `DELETE /api/:ns/:q/job/:id`: always 204. */
  private async ack(rq: string, jobId: string): Promise<Reply> {
    await this.ackQuietly(rq, jobId);
    return { status: 204 };
  }

  /** Acknowledge a job if this queue has it; an unknown (or malformed) id is no error. */
  private async ackQuietly(rq: string, jobId: string): Promise<void> {
    const ref = jobRef(jobId);
    if (ref === undefined) return;
    try {
      await this.client.ack(rq, ref);
    } catch (e) {
      if (e instanceof RqError && (e.code === 'RQ_NOT_FOUND' || e.code === 'RQ_NOT_IN_STATE')) return;
      throw e;
    }
  }

  /** §4.6 `GET /api/:ns/:q/peek`: the job the next consume would get, not consumed. */
  private async peekHead(ns: string, q: string): Promise<Reply> {
    const job = await this.client.peek(rqQueue(ns, q));
    if (!job) return fail(404, 'job not found');
    return { status: 200, body: jobObject(job, ns, q) };
  }

  /** §4.7 `GET /api/:ns/:q/job/:id`: a job of this queue in any state but gone. */
  private async peekJob(ns: string, q: string, jobId: string): Promise<Reply> {
    const ref = jobRef(jobId);
    const job = ref === undefined ? null : await this.client.peek(rqQueue(ns, q), ref);
    if (!job || job.state === 'done') return fail(404, 'job not found');
    return { status: 200, body: jobObject(job, ns, q) };
  }

  /** §4.8 `GET /api/:ns/:q/size` (public): jobs ready now. */
  private async size(ns: string, q: string): Promise<Reply> {
    const stats = await this.client.stats(rqQueue(ns, q));
    return { status: 200, body: { namespace: ns, queue: q, size: stats.ready } };
  }

  /** §4.9 `DELETE /api/:ns/:q`: every ready job goes; delayed, in-flight and dead ones stay. */
  private async destroy(rq: string): Promise<Reply> {
    await this.client.purgeReady(rq);
    return { status: 204 };
  }

  /** §4.10 `GET /api/:ns/:q/deadletter`. */
  private async deadLetterInfo(ns: string, q: string): Promise<Reply> {
    const dl = await this.client.deadLetter(rqQueue(ns, q));
    return { status: 200, body: { namespace: ns, queue: q, deadletter_size: dl.size, deadletter_head: dl.head ? jobIdOf(dl.head) : '' } };
  }

  /** §4.10 `GET /api/:ns/:q/deadletter/size` (public). */
  private async deadLetterSize(ns: string, q: string): Promise<Reply> {
    const dl = await this.client.deadLetter(rqQueue(ns, q));
    return { status: 200, body: { namespace: ns, queue: q, size: dl.size } };
  }

  /** §4.10 `PUT /api/:ns/:q/deadletter?limit&ttl`: respawn the oldest dead jobs to the tail, with 1 try. */
  private async respawn(rq: string, query: URLSearchParams): Promise<Reply> {
    const limit = queryInt(query, 'limit', 1);
    if (limit === undefined || limit < 1) return fail(400, 'invalid limit');
    const ttlS = queryInt(query, 'ttl', DEFAULTS.respawnTtlS);
    if (ttlS === undefined || ttlS < 0) return fail(400, 'invalid ttl');
    const count = await this.client.respawn(rq, limit, Math.min(ttlS, MAX_RESPAWN_TTL_S) * 1000);
    return { status: 200, body: { msg: 'respawned', count } };
  }

  /** §4.10 `DELETE /api/:ns/:q/deadletter?limit`: delete the oldest dead jobs for good. */
  private async deleteDead(rq: string, query: URLSearchParams): Promise<Reply> {
    const limit = queryInt(query, 'limit', 1);
    if (limit === undefined || limit < 1) return fail(400, 'invalid limit');
    await this.client.deadLetter(rq, { delete: limit });
    return { status: 204 };
  }

  // ---- admin (§6) ---------------------------------------------------------------

  private async admin(req: http.IncomingMessage, res: http.ServerResponse, segs: string[], query: URLSearchParams): Promise<Reply> {
    const m = req.method;
    const [first, ns, token] = segs;
    if (segs.length === 1 && m === 'GET') {
      if (first === 'version') return { status: 200, body: { version: this.version, server: 'rq' } };
      if (first === 'pools') return { status: 200, body: { pools: [DEFAULT_POOL] } };
      if (first === 'info') return { status: 200, body: { version: this.version, pools: [DEFAULT_POOL], auth: this.config.auth } };
    }
    if (first !== 'token' || ns === undefined) return NOT_FOUND;
    const isCreate = segs.length === 2 && m === 'POST';
    const isList = segs.length === 2 && m === 'GET';
    const isDelete = segs.length === 3 && m === 'DELETE' && token !== undefined;
    if (!isCreate && !isList && !isDelete) return NOT_FOUND;
    const refused = this.adminRefusal(req);
    if (refused) return refused;
    if (isCreate) return this.mintToken(req, res, ns, query);
    const nsProblem = adminNamespaceProblem(ns);
    if (nsProblem) return nsProblem;
    if (isList) return { status: 200, body: { tokens: this.tokens.list(ns) } };
    const split = splitPool(token!);
    if (split.pool !== DEFAULT_POOL) return fail(400, 'the pool was not exists');
    this.tokens.remove(ns, split.token);
    return { status: 204 };
  }

  /** `POST /token/:ns` with `description`, optional `token` (custom, ≥ 20 characters) and `pool`, from the form or the query. */
  private async mintToken(req: http.IncomingMessage, res: http.ServerResponse, ns: string, query: URLSearchParams): Promise<Reply> {
    const form = await readForm(req, res);
    if (isReply(form)) return form;
    const field = (key: string): string => form.get(key) || query.get(key) || '';
    const description = field('description');
    if (description === '') return fail(400, 'invalid description');
    const custom = field('token');
    if (custom !== '' && custom.length < 20) return fail(400, 'the user token was too short');
    const nsProblem = adminNamespaceProblem(ns);
    if (nsProblem) return nsProblem;
    let pool = field('pool') || DEFAULT_POOL;
    let token = custom;
    if (custom.includes(':')) ({ pool, token } = splitPool(custom));
    if (pool !== DEFAULT_POOL) return fail(400, 'the pool was not exists');
    if (token === '') token = ulid();
    if (!this.tokens.add(ns, token, description)) return fail(400, 'the token has already existed');
    return { status: 201, body: { token } };
  }

  /**
   * The token routes' gate: HTTP Basic auth against `accounts` when configured; without
   * them the routes are off, unless `auth` is false (dev mode, where they are open).
   */
  private adminRefusal(req: http.IncomingMessage): Reply | undefined {
    const accounts = this.config.accounts;
    if (!accounts) return this.config.auth ? ADMIN_OFF : undefined;
    const unauthorized: Reply = { status: 401, headers: { 'WWW-Authenticate': 'Basic realm="lmstfy admin"' } };
    const m = /^Basic\s+(\S+)$/i.exec(req.headers.authorization ?? '');
    if (!m) return unauthorized;
    const text = Buffer.from(m[1]!, 'base64').toString('utf8');
    const at = text.indexOf(':');
    if (at < 0) return unauthorized;
    const want = accounts[text.slice(0, at)];
    return want !== undefined && sameSecret(text.slice(at + 1), want) ? undefined : unauthorized;
  }

  private errorReply(e: unknown, req: http.IncomingMessage): Reply {
    const where = { method: req.method, url: req.url };
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
  if (reply.body === undefined || reply.status === 204) {
    res.writeHead(reply.status, headers).end();
    return;
  }
  const text = JSON.stringify(reply.body);
  headers['Content-Type'] = 'application/json; charset=utf-8';
  headers['Content-Length'] = Buffer.byteLength(text);
  res.writeHead(reply.status, headers).end(text);
}

/** The admin routes' namespace checks (§6 wording). */
function adminNamespaceProblem(ns: string): Reply | undefined {
  if (Buffer.byteLength(ns) > LIMITS.nameBytes) return fail(400, 'the namespace name was too long');
  if (!isNamespace(ns)) return fail(400, 'namespace name contains forbidden characters');
  return undefined;
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

/**
 * A request body of at most `max` bytes, or its refusal: a longer one is a 413, and one
 * that does not fit in the body budget (lib/body-budget.ts) a 503 with `Retry-After`,
 * that close the connection (the rest is read and dropped meanwhile); one cut short is a 400.
 */
async function readBytes(req: http.IncomingMessage, res: http.ServerResponse, max: number): Promise<Buffer | Reply> {
  const read = await readBody(req, res, { max, over: 'drop-and-close' });
  if (read.kind === 'body') return read.bytes;
  if (read.kind === 'closed' && read.received) return read.received;
  if (read.kind === 'too-large' || read.kind === 'busy') {
    const { status, error } = ERROR_REPLIES[read.kind === 'busy' ? 'RQ_BUSY' : 'RQ_TOO_LARGE'];
    return { ...fail(status, error), close: read.close };
  }
  return fail(400, 'failed to read body');
}

/** An admin form body (application/x-www-form-urlencoded); empty for any other type. */
async function readForm(req: http.IncomingMessage, res: http.ServerResponse): Promise<URLSearchParams | Reply> {
  const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/x-www-form-urlencoded') return new URLSearchParams();
  const body = await readBytes(req, res, FORM_BODY_BYTES);
  return isReply(body) ? body : new URLSearchParams(body.toString('utf8'));
}

function sameSecret(given: string, want: string): boolean {
  const h = (s: string): Buffer => crypto.createHash('sha256').update(s).digest();
  return crypto.timingSafeEqual(h(given), h(want));
}

function packageVersion(): string {
  try {
    const pkg = JSON.parse(fs.readFileSync(path.join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version?: unknown };
    return typeof pkg.version === 'string' ? pkg.version : 'unknown';
  } catch {
    return 'unknown';
  }
}
