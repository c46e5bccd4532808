/**
 * The Cloudq front door (docs/doors/cloudq.md): `POST|PUT /:queue` publishes a job,
 * `GET /:queue` reserves the oldest ready one, `DELETE /:queue/:id` deletes it, and
 * `GET /` says hello. A Cloudq queue is the rq queue of the same name, reached
 * only through the PullClient: this module parses, calls one command and renders; it
 * keeps no queue state, so a restart of the web process loses no job and no reservation.
 *
 * Before the pipeline, the browser rules of lib/http-listener.ts: a browser's request that
 * does not call this door by one of the install's host names is a 421, and one from
 * another site's page a 403, whatever its method (a GET reserves a job).
 *
 * The request pipeline, in this order (every step may end the request):
 * 1. HTTP Basic auth, when `basicAuth` is configured: a missing or wrong credential is a
 *    401 with `WWW-Authenticate: Basic` before anything else, the body unread.
 * 2. The route, by method and path shape (query string ignored): anything else is a 404
 *    `not found`. Paths are split on `/` first and each segment percent-decoded
 *    after, so `%2F` never makes a new segment.
 * 3. The queue name: `[A-Za-z0-9_.-]{1,255}`, and also the shared protocol rule of
 *    names.ts (no leading dot, no `.deleted.<n>` suffix), so a Cloudq name is always
 *    an rq queue name; anything else is a 400 `invalid queue name`.
 * 4. The queue must be open to this door (door-access.ts): one in a token-protected
 *    lmstfy namespace that `queues` does not list is a 403 `queue belongs to a protected
 *    lmstfy namespace`, for every route, before the body is read or the queue is made.
 * 5. Publish only: the body, at most 10 MiB (a 413 `job too large`; a 503 `server busy,
 *    try again later` with `Retry-After` when it does not fit in the web process's body
 *    budget, lib/body-budget.ts), parsed as JSON whatever the content type says (curl's
 *    `-d` sends a form type), or, failing that and sent as
 *    `application/x-www-form-urlencoded`, as Rack-style nested keys with qs; then the job
 *    checks (object, klass, args) in node-cloudq's order, the first failure a 400 (before them, a body
 *    nested deeper than MAX_JSON_DEPTH arrays and objects is a 400 too).
 *
 * Stored form: `src` = cloudq, `param1` = klass, `param2` = compact JSON of args
 * (for RQ scripts and the dashboard), `attach/payload` = the job object minus `id`, as
 * JSON text, which is what a reserve hands back with the rq short id as `id`. A job of
 * another front door or of RQ itself reads as `{klass: param1 || <queue>, args: [the
 * non-null param1..param4]}`, plus `payload` (its JSON value, else its text) when its
 * `attach/payload` is not a Cloudq job object.
 *
 * Reserve leases with owner `cloudq` and no TTR unless `reserveTimeoutMs` is set; the
 * queue process then puts an expired reservation back in its place with `count + 1`,
 * or in err once `count` reaches `max_count` (RQ's 15 by default). With `waitMs`, an
 * empty GET waits inside the queue process; a client that goes away ends the wait and
 * nothing stays reserved for it (a job leased in the very moment it left is handed back).
 * A GET that does not wait never makes a queue; a waiting GET (`waitMs`) does, as lmstfy's
 * blocking consume does, so the publish that comes later wakes it.
 *
 * Every RqError reaches the client through the one REPLY_OF table; anything else is a
 * 500 `internal error`, its detail logged.
 */
import crypto from 'node:crypto';
import http from 'node:http';
import qs from 'qs';
import * as v from 'valibot';
import { RESTART_RETRY_AFTER_S } from '../client/call.js';
import { flag, integerIn, parseConfigValue, plainObject } from '../domain/config-check.js';
import { RqError, explain, type ErrorCode } from '../domain/errors.js';
import { inputProblem } from '../domain/input-check.js';
import { browserHostNames, protocolSection } from '../domain/main-config.js';
import { MAX_JSON_DEPTH, isTooDeep } from '../domain/json-depth.js';
import { isPlainObject } from '../domain/message.js';
import { isProtocolQueueName } from '../domain/names.js';
import { browserRefusal, createHttpServer } from '../lib/http-listener.js';
import type { Logger } from '../lib/logger.js';
import { doorAccess, parseQueuePatterns, type QueueAccess } from './door-access.js';
import { readBody, type BodyLimit } from './http-body.js';
import type { PullClient, PulledJob } from './pull-client.js';
import type { ProtocolContext } from './context.js';

/** The `protocols.cloudq` section, checked (its `port` and `addr` are main-config.ts's). */
export interface CloudqConfig {
  /** Reserve answers the job's members at the top level, as the Ruby client reads them. @default false */
  flatReserve: boolean;
  /** A reservation still held after this long goes back to its place; 0 = held for ever (v0.1.0). @default 0 */
  reserveTimeoutMs: number;
  /** An empty GET waits this long for a job before it answers empty; 0 = answer at once (v0.1.0). @default 0 */
  waitMs: number;
  /** HTTP Basic auth: one user, one or two accepted passwords (node-cloudq's SECRET and SECRET2). @default none */
  basicAuth: { user: string; passwords: string[] } | undefined;
  /** Patterns of the token-protected lmstfy queues this door may touch (door-access.ts). @default [] */
  queues: RegExp[];
}

/** The longest TTR a Node timer can hold. */
const MAX_RESERVE_TIMEOUT_MS = 2_147_483_647;
/** A GET held longer than an hour is a client or proxy problem, not a long poll. */
const MAX_WAIT_MS = 3_600_000;
/** The largest request body (node-cloudq's `express.json` limit). */
const BODY_LIMIT = 10 * 1024 * 1024;
/**
 * Past BODY_LIMIT the rest of a body is read and dropped, up to this much in all, so the
 * client is reading when the 413 comes (closing on unread bytes would reset it). A body
 * announced or sent beyond this gets its 413 at once and the connection closed.
 */
const DRAIN_LIMIT = 64 * 1024 * 1024;
const BODY: BodyLimit = { max: BODY_LIMIT, over: { drainUpTo: DRAIN_LIMIT } };
/** Cloudq's queue-name charset; names.ts adds the rules every front door shares. */
const CLOUDQ_NAME = /^[A-Za-z0-9_.-]{1,255}$/;
/** Rack-style nested form keys (`job[args][]=a`), as deep and as long as a real job needs. */
const QS_OPTIONS = { depth: 20, arrayLimit: 10_000, parameterLimit: 100_000 } as const;
const JSON_TYPE = 'application/json; charset=utf-8';

/** A whole number of milliseconds from 0 to `max`; absent is 0. */
const millis = (max: number) => v.optional(integerIn(0, max, `an integer number of milliseconds 0..${max}`), 0);

const USER_WANT = 'a non-empty string without ":"';
const PASSWORDS_WANT = 'an array of one or two non-empty strings';

/** The section's own keys (`queues` is door-access.ts's). */
const SECTION = protocolSection(
  {
    flatReserve: flag(false),
    reserveTimeoutMs: millis(MAX_RESERVE_TIMEOUT_MS),
    waitMs: millis(MAX_WAIT_MS),
    basicAuth: v.nullish(
      plainObject(
        'an object {"user": string without ":", "passwords": [one or two non-empty strings]}',
        v.object({
          user: v.pipe(v.string(USER_WANT), v.nonEmpty(USER_WANT), v.excludes(':', USER_WANT)),
          passwords: v.custom<string[]>(
            (list) => Array.isArray(list) && list.length >= 1 && list.length <= 2 && list.every((p) => typeof p === 'string' && p !== ''),
            PASSWORDS_WANT,
          ),
        }),
      ),
    ),
    queues: v.optional(v.unknown()),
  },
  (keys) => `is not a Cloudq key (known: ${keys})`,
);

/** Check the section's own keys; an unknown key is refused too (a misspelt option would silently be off). */
export function parseCloudqConfig(raw: Record<string, unknown>): CloudqConfig {
  const { flatReserve, reserveTimeoutMs, waitMs, basicAuth, queues } = parseConfigValue(SECTION, raw, 'protocols.cloudq');
  return { flatReserve, reserveTimeoutMs, waitMs, basicAuth: basicAuth ?? undefined, queues: parseQueuePatterns('cloudq', queues) };
}

/** A reply: status, JSON body, extra headers. */
interface Reply {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
  /** Close the connection after it (a body left unread). */
  close?: boolean;
}

const refuse = (status: number, message: string): Reply => ({ status, body: { status: 'error', message } });
const SUCCESS: Reply = { status: 200, body: { status: 'success' } };
const EMPTY: Reply = { status: 200, body: { status: 'empty' } };
const NOT_FOUND = refuse(404, 'not found');
const INVALID_QUEUE = refuse(400, 'invalid queue name');
const CLOSED_QUEUE = refuse(403, 'queue belongs to a protected lmstfy namespace');
const TOO_LARGE = refuse(413, 'job too large');
const BUSY = refuse(503, 'server busy, try again later');
const RESTART_RETRY = { 'Retry-After': String(RESTART_RETRY_AFTER_S) };
const INTERNAL = refuse(500, 'internal error');

/**
 * Every RqError code as a Cloudq reply. A missing or no-longer-deletable job is the
 * delete's 404; rq-mgr, a queue process or the disk failing is the 500 `internal error` (detail logged);
 * a queue process that is restarting is a 503 with `Retry-After` (client/call.ts).
 */
export const REPLY_OF = {
  RQ_NOT_FOUND: refuse(404, 'job not found'),
  RQ_NOT_IN_STATE: refuse(404, 'job not found'),
  RQ_QUEUE_NOT_FOUND: refuse(404, 'queue not found'),
  RQ_BAD_MESSAGE: refuse(400, 'invalid job'),
  RQ_BAD_REQUEST: refuse(400, 'invalid request'),
  RQ_TOO_LARGE: TOO_LARGE,
  RQ_BUSY: BUSY,
  RQ_ENCODED_BODY: refuse(415, 'compressed bodies are not read'),
  RQ_QUEUE_DOWN: refuse(503, 'queue is down'),
  RQ_NOT_PULL: refuse(409, 'queue runs a script; its jobs cannot be reserved'),
  RQ_DUPLICATE: refuse(409, 'job already exists'),
  RQ_STALE: refuse(409, 'job changed'),
  RQ_FORBIDDEN: refuse(403, 'forbidden'),
  RQ_ATTACH: INTERNAL,
  RQ_IO: INTERNAL,
  RQ_PROTOCOL: INTERNAL,
  RQ_CONFIG: INTERNAL,
  RQ_UPSTREAM: INTERNAL,
  RQ_UNAVAILABLE: { ...refuse(503, 'queue is restarting, try again later'), headers: RESTART_RETRY },
  RQ_OUTCOME_UNKNOWN: { ...refuse(503, 'queue stopped before it answered: the request may have been done'), headers: RESTART_RETRY },
  RQ_NO_SPACE: refuse(507, 'no space left on device'),
} as const satisfies Record<ErrorCode, Reply>;

/** The reply for anything a handler threw. */
function replyOfError(e: unknown): Reply {
  if (!(e instanceof RqError)) return INTERNAL;
  // A full disk says which: `no space left on device: queues/<q>`.
  return e.code === 'RQ_NO_SPACE' ? refuse(REPLY_OF.RQ_NO_SPACE.status, e.message) : REPLY_OF[e.code];
}

type Route =
  | { kind: 'hello' }
  | { kind: 'publish'; queue: string }
  | { kind: 'reserve'; queue: string }
  | { kind: 'delete'; queue: string; id: string }
  | { kind: 'not-found' }
  | { kind: 'bad-queue' };

function decode(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}

function isCloudqQueueName(name: string | undefined): name is string {
  return name !== undefined && CLOUDQ_NAME.test(name) && isProtocolQueueName(name);
}

/** Method and path to a route; the query string is ignored. */
function routeOf(method: string | undefined, url: string | undefined): Route {
  let path = (url ?? '/').split('?', 1)[0]!;
  const absolute = /^https?:\/\/[^/]*(\/.*)?$/i.exec(path);
  if (absolute) path = absolute[1] ?? '/';
  if (!path.startsWith('/')) return { kind: 'not-found' };
  if (path === '/') return method === 'GET' ? { kind: 'hello' } : { kind: 'not-found' };
  const segments = path.slice(1).split('/');
  let route: Route;
  if (segments.length === 1 && method === 'GET') route = { kind: 'reserve', queue: segments[0]! };
  else if (segments.length === 1 && (method === 'POST' || method === 'PUT')) route = { kind: 'publish', queue: segments[0]! };
  else if (segments.length === 2 && method === 'DELETE') route = { kind: 'delete', queue: segments[0]!, id: segments[1]! };
  else return { kind: 'not-found' };
  const queue = decode(route.queue);
  if (!isCloudqQueueName(queue)) return { kind: 'bad-queue' };
  if (route.kind !== 'delete') return { ...route, queue };
  // An id that is not even percent-encoding names no job: the lookup finds nothing.
  return { ...route, queue, id: decode(route.id) ?? '' };
}

/**
 * A job object: `klass` a non-empty string and `args` an array, other keys as they
 * come. A problem's message is said of its field (`klass must be a string`), a missing
 * key's is `key required`; anything but an object is `job object required`.
 */
const JOB = plainObject(
  'job object required',
  v.looseObject(
    {
      klass: v.pipe(v.string('must be a string'), v.nonEmpty('must be a string')),
      args: v.array(v.unknown(), 'must be an array'),
    },
    'key required',
  ),
);

/** The publish message of the first check a job object fails, or undefined when it is one. */
function jobProblem(job: unknown): string | undefined {
  const problem = inputProblem(JOB, job);
  return problem && (problem.field === '' ? problem.message : `${problem.field} ${problem.message}`);
}

/**
 * The job of a publish body (wrapped, or unwrapped when it has no `job` and has `klass`),
 * or the publish check's message; beyond node-cloudq, a body nested deeper than MAX_JSON_DEPTH is refused.
 */
function checkJob(body: unknown): { job: Record<string, unknown> } | { message: string } {
  if (isTooDeep(body)) return { message: `job nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels` };
  if (!isPlainObject(body)) return { message: 'job object required' };
  const job = Object.hasOwn(body, 'job') ? body['job'] : Object.hasOwn(body, 'klass') ? body : undefined;
  const problem = jobProblem(job);
  return problem === undefined ? { job: job as Record<string, unknown> } : { message: problem };
}

/** The body as JSON, else (form-typed) as nested form keys; undefined when it is neither. */
function parseBody(bytes: Buffer, contentType: string | undefined): unknown {
  let text = bytes.toString('utf8');
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  try {
    return JSON.parse(text) as unknown;
  } catch {
    const type = (contentType ?? '').split(';', 1)[0]!.trim().toLowerCase();
    return type === 'application/x-www-form-urlencoded' ? qs.parse(text, QS_OPTIONS) : undefined;
  }
}

/** What a reserve hands out for a leased message, also one Cloudq did not make. */
function jobOf(job: PulledJob): Record<string, unknown> {
  let stored: unknown;
  let hasStored = false;
  if (job.payload !== null) {
    const text = Buffer.from(job.payload, 'base64').toString('utf8');
    try {
      stored = JSON.parse(text) as unknown;
    } catch {
      stored = text;
    }
    hasStored = true;
    if (v.is(JOB, stored)) {
      const { id: _ignored, ...rest } = stored;
      return { ...rest, id: job.id };
    }
  }
  const [param1] = job.params;
  const klass = param1 === null || param1 === undefined || param1 === '' ? job.queue : typeof param1 === 'string' ? param1 : JSON.stringify(param1);
  const args = job.params.filter((p) => p !== null && p !== undefined);
  return { klass, args, ...(hasStored ? { payload: stored } : {}), id: job.id };
}

const sha256 = (s: string): Buffer => crypto.createHash('sha256').update(s).digest();

/** Whether the request carries the configured user and one of its passwords (compared in constant time). */
function isAuthorized(req: http.IncomingMessage, auth: NonNullable<CloudqConfig['basicAuth']>): boolean {
  const m = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(req.headers.authorization ?? '');
  if (!m) return false;
  const decoded = Buffer.from(m[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return false;
  const userOk = crypto.timingSafeEqual(sha256(decoded.slice(0, colon)), sha256(auth.user));
  const given = sha256(decoded.slice(colon + 1));
  let passOk = false;
  for (const p of auth.passwords) passOk = crypto.timingSafeEqual(given, sha256(p)) || passOk;
  return userOk && passOk;
}

function send(res: http.ServerResponse, reply: Reply): void {
  if (res.headersSent || res.destroyed) return;
  const body = JSON.stringify(reply.body);
  res.statusCode = reply.status;
  res.setHeader('Content-Type', JSON_TYPE);
  res.setHeader('Content-Length', Buffer.byteLength(body));
  for (const [k, v] of Object.entries(reply.headers ?? {})) res.setHeader(k, v);
  if (reply.close) res.setHeader('Connection', 'close');
  res.end(body);
}

/** The Cloudq verbs over the PullClient, each returning its reply (null: the client went away). */
class Cloudq {
  private readonly client: PullClient;
  private readonly config: CloudqConfig;
  /** Whether this door may touch a queue (door-access.ts). */
  readonly mayTouch: QueueAccess;

  constructor(client: PullClient, config: CloudqConfig, mayTouch: QueueAccess) {
    this.client = client;
    this.config = config;
    this.mayTouch = mayTouch;
  }

  /** Publish: checked, stored durably (publish resolves after the commit), its id in the headers. */
  async publish(queue: string, body: unknown): Promise<Reply> {
    const checked = checkJob(body);
    if ('message' in checked) return refuse(400, checked.message);
    const { id: _ignored, ...stored } = checked.job;
    const { id } = await this.client.publish(queue, {
      src: 'cloudq',
      payload: Buffer.from(JSON.stringify(stored)),
      params: { param1: stored['klass'], param2: JSON.stringify(stored['args']) },
    });
    return { ...SUCCESS, headers: { Location: `/${queue}/${encodeURIComponent(id)}`, 'X-Cloudq-Id': id } };
  }

  /** Reserve: the oldest ready job, now reserved; empty when none (came within waitMs). */
  async reserve(queue: string, signal: AbortSignal): Promise<Reply | null> {
    const jobs = await this.client.lease([queue], {
      owner: 'cloudq',
      ttr_ms: this.config.reserveTimeoutMs || null,
      count: 1,
      wait_ms: this.config.waitMs,
      signal,
      // A waiting GET makes the queue, so the publish that makes it later wakes the wait.
      create: this.config.waitMs > 0,
    });
    // The client went away: nothing was kept reserved for it (the client refunds).
    if (signal.aborted) return null;
    const job = jobs[0];
    if (!job) return EMPTY;
    const rendered = jobOf(job);
    return { status: 200, body: this.config.flatReserve ? rendered : { job: rendered } };
  }

  /** Delete: a new or reserved job to done; anything else is not found. */
  async delete(queue: string, id: string): Promise<Reply> {
    if (id === '') return REPLY_OF.RQ_NOT_FOUND;
    await this.client.ack(queue, id, { from: ['que', 'run'], status: 'deleted via cloudq' });
    return SUCCESS;
  }
}

/** One request through the pipeline of the file comment; null when there is no one to answer. */
async function handle(cloudq: Cloudq, config: CloudqConfig, req: http.IncomingMessage, res: http.ServerResponse): Promise<Reply | null> {
  if (config.basicAuth && !isAuthorized(req, config.basicAuth)) {
    return { ...refuse(401, 'unauthorized'), headers: { 'WWW-Authenticate': 'Basic realm="cloudq", charset="UTF-8"' } };
  }
  const route = routeOf(req.method, req.url);
  if ('queue' in route && !cloudq.mayTouch(route.queue)) return CLOSED_QUEUE;
  switch (route.kind) {
    case 'hello':
      return { status: 200, body: { status: 'success', message: 'cloudq' } };
    case 'not-found':
      return NOT_FOUND;
    case 'bad-queue':
      return INVALID_QUEUE;
    case 'publish': {
      const read = await readBody(req, res, BODY);
      if (read.kind === 'too-large') return { ...TOO_LARGE, close: read.close };
      if (read.kind === 'busy') return { ...BUSY, close: read.close };
      if (read.kind !== 'body') return null;
      return cloudq.publish(route.queue, parseBody(read.bytes, req.headers['content-type']));
    }
    case 'reserve': {
      const gone = new AbortController();
      const onClose = (): void => {
        if (!res.writableFinished) gone.abort();
      };
      res.once('close', onClose);
      try {
        return await cloudq.reserve(route.queue, gone.signal);
      } finally {
        res.removeListener('close', onClose);
      }
    }
    case 'delete':
      return cloudq.delete(route.queue, route.id);
  }
}

function logFailure(log: Logger, req: http.IncomingMessage, e: unknown, reply: Reply): void {
  const fields = { method: req.method, url: req.url, code: e instanceof RqError ? e.code : undefined, err: explain(e) };
  if (reply.status >= 500) log.error(fields, 'cloudq request failed');
  else log.debug(fields, 'cloudq request refused');
}

export function cloudqServer(ctx: ProtocolContext): http.Server {
  const config = parseCloudqConfig(ctx.section.raw);
  const cloudq = new Cloudq(ctx.client, config, doorAccess(ctx.namespaces, config.queues));
  const hosts = browserHostNames(ctx.main, ctx.section.addr);
  // The head within 10 s and the whole request within 2 min; a waiting GET is past both.
  const timeouts = { headersTimeoutMs: 10_000, requestTimeoutMs: 120_000 };
  return createHttpServer((req, res) => {
    req.on('error', () => undefined);
    const refused = browserRefusal(req, hosts);
    if (refused) {
      send(res, refuse(refused.status, refused.reason));
      return;
    }
    handle(cloudq, config, req, res).then(
      (reply) => {
        if (reply) send(res, reply);
      },
      (e: unknown) => {
        const reply = replyOfError(e);
        logFailure(ctx.log, req, e, reply);
        send(res, reply);
      },
    );
  }, timeouts);
}
