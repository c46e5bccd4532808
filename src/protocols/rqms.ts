/**
 * The RQMS front door (docs/doors/rqms.md): an SQS-like HTTP queue in front of rq's pull
 * commands. Routes:
 *
 *   GET    /<queue>?count=<n>&time=<s>   fetch and lock      200 {"items":[{ticket,value}…]}
 *   POST   /<queue>?id=<id>   <json>     add an item         201 | 409 the id is taken
 *   PUT    /<queue>/<name>    <json>     set (upsert) one    201, lock cleared, old tickets stale
 *   DELETE /<queue>           <ticket>   finish an item      200 | 409 stale | 404 gone
 *
 * Mapping: the queue is the rq queue of that name (made on first write); an item is
 * a message whose external id is the item id, whose `attach/payload` is the JSON text as
 * posted, and which never gives up (max_count 0). Fetch order is the id's bytes: every
 * item has rank 0 and the hex of its id's UTF-8 bytes as sort key, and hex strings
 * compare as the bytes do. A fetch is a lease with owner `rqms` and TTR `time` (≤ 0: a
 * lock that has already run out); the ticket is the JSON text of
 * `[id, "<rev>-<hash of queue, id, message, rev>"]`. A delete looks the id up (peek),
 * checks the hash against the message that holds the id now, and acks at the rev, so
 * any write since (a fetch, a set) or a new item of the same id makes the ticket stale.
 * The queue process compares the rev and moves the message in one step; nothing here
 * keeps queue state.
 *
 * Replies: GET answers application/json; everything else a short text/html phrase (the
 * reference server's where it has one). Clients look only at the status. Every RqError
 * becomes a reply through REPLIES, the one table. A request that makes no progress for
 * WATCHDOG_MS gets the reference's 500 JSON; a fetch answered by the watchdog (or for a
 * client that has gone) hands its leases back. Bodies over MAX_BODY_BYTES are a 413, and
 * one that does not fit in the web process's body budget (lib/body-budget.ts) a 503 with
 * `Retry-After`.
 *
 * Before any of it, the browser rules of lib/http-listener.ts: a browser's request that
 * does not call this door by one of the install's host names is a 421, and one from
 * another site's page a 403, whatever its method (a GET locks items). Then a queue in a
 * token-protected lmstfy namespace is closed to this door (a 403, before anything else is
 * read) unless the section's `queues` patterns name it (door-access.ts).
 */
import { createHash } from 'node:crypto';
import http from 'node:http';
import * as v from 'valibot';
import { parseConfigValue } from '../domain/config-check.js';
import { RqError, explain, type ErrorCode } from '../domain/errors.js';
import { checkInput, type InputProblem } from '../domain/input-check.js';
import { browserHostNames, protocolSection } from '../domain/main-config.js';
import { isProtocolQueueName } from '../domain/names.js';
import { bodyBudget } from '../lib/body-budget.js';
import { browserRefusal, createHttpServer } from '../lib/http-listener.js';
import { doorAccess, parseQueuePatterns, type QueueAccess } from './door-access.js';
import { readBody } from './http-body.js';
import type { PublishInput, PulledJob } from './pull-client.js';
import type { ProtocolContext } from './context.js';

/** The largest request body: 10 MiB (the reference had no limit; CouchDB's default document limit is 8 MB). */
export const MAX_BODY_BYTES = 10 * 1024 * 1024;
/** A request that makes no progress this long is answered 500 (the reference's watchdog). */
const WATCHDOG_MS = 5_000;
/** `count` above this is clamped (our limit, the pull commands'). */
const MAX_COUNT = 1000;
/** Default lock length, seconds. */
const DEFAULT_TIME_S = 10;
/** Item ids and names: at most this many UTF-8 bytes. */
const MAX_ID_BYTES = 1024;
/** Longer locks are cut to 100 years, so now + TTR stays an exact epoch-ms number. */
const MAX_TTR_MS = 100 * 365 * 24 * 3600 * 1000;
const STATUS_DELETED = 'deleted via rqms';

/** The reference server's phrases. */
const PHRASE = {
  posted: 'It shall be done.',
  set: 'Well spoken.',
  deleted: 'Well done, sir!',
  badValue: "That's not all the Queen's English now, is it?",
  badTicket: "I'm sorry, but that sort of language simply will not do.",
  stale: 'You may have let me know in a more timely fashion.',
  badMethod: 'Kindly stop spinning about me.',
} as const;

/** A 500's phrase by method; GET answers the watchdog's JSON. */
const FAILED: Record<string, string | undefined> = {
  POST: 'Dear me!',
  PUT: "I'm afraid that didn't work.",
  DELETE: "That didn't end so well.",
};
const INTERNAL_ERROR_JSON = JSON.stringify({ error: true, message: 'Internal error processing request' });

/** Every RqError's reply: its status, and its phrase (null: the method's 500 phrase; the detail is logged, not sent). */
export const REPLIES = {
  RQ_BAD_REQUEST: { status: 400, phrase: PHRASE.badTicket },
  RQ_BAD_MESSAGE: { status: 400, phrase: PHRASE.badValue },
  RQ_NOT_FOUND: { status: 404, phrase: 'I regret to say there is no such item.' },
  RQ_QUEUE_NOT_FOUND: { status: 404, phrase: 'I regret to say there is no such queue.' },
  RQ_STALE: { status: 409, phrase: PHRASE.stale },
  RQ_DUPLICATE: { status: 409, phrase: 'I have an item of that id already, thank you.' },
  RQ_NOT_IN_STATE: { status: 409, phrase: PHRASE.stale },
  RQ_NOT_PULL: { status: 409, phrase: 'That queue runs its own script; its items are not mine to hand out.' },
  RQ_FORBIDDEN: { status: 403, phrase: 'I am not permitted to do that.' },
  RQ_TOO_LARGE: { status: 413, phrase: `That is rather more than I can carry (${MAX_BODY_BYTES} bytes at most).` },
  RQ_BUSY: { status: 503, phrase: 'My hands are full just now. Do try again in a moment.' },
  RQ_ENCODED_BODY: { status: 415, phrase: PHRASE.badTicket },
  RQ_QUEUE_DOWN: { status: 503, phrase: 'That queue is resting at the moment. Do try again later.' },
  RQ_ATTACH: { status: 500, phrase: null },
  RQ_IO: { status: 500, phrase: null },
  RQ_PROTOCOL: { status: 500, phrase: null },
  RQ_CONFIG: { status: 500, phrase: null },
  RQ_UPSTREAM: { status: 500, phrase: null },
  RQ_UNAVAILABLE: { status: 503, phrase: 'That queue is just getting up again. Do try again in a moment.' },
  RQ_OUTCOME_UNKNOWN: { status: 503, phrase: 'That queue nodded off before it could answer; it may have done as you asked. Do look before you ask again.' },
  RQ_NO_SPACE: { status: 507, phrase: 'I am afraid there is no room left to put it.' },
} as const satisfies Record<ErrorCode, { status: number; phrase: string | null }>;

/** Refusals made here, whose message is the text to send (an RqError from the queues sends its code's phrase). */
const OWN_WORDS = new WeakSet<RqError>();

function refuse(code: ErrorCode, text: string): RqError {
  const e = new RqError(code, text);
  OWN_WORDS.add(e);
  return e;
}

interface Reply {
  status: number;
  type: 'json' | 'html';
  body: string;
}

const html = (status: number, text: string): Reply => ({ status, type: 'html', body: text.replace(/[&<>]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;' })[c]!) });
const json = (status: number, body: string): Reply => ({ status, type: 'json', body });

/** The reply to a failure of `method`; unexpected ones are logged. */
function failureReply(method: string, thrown: unknown, log: ProtocolContext['log']): Reply {
  const e = thrown instanceof RqError ? thrown : undefined;
  const { status, phrase } = e ? REPLIES[e.code] : { status: 500, phrase: null };
  // A full disk says which, after the phrase: `(no space left on device: queues/<q>)`.
  const text = e && OWN_WORDS.has(e) ? e.message : e?.code === 'RQ_NO_SPACE' ? `${phrase} (${e.message})` : phrase;
  if (status >= 500) log.error({ method, err: explain(thrown) }, 'rqms request failed');
  if (method === 'GET') return json(status, text === null ? INTERNAL_ERROR_JSON : JSON.stringify({ error: true, message: text }));
  return html(status, text ?? FAILED[method] ?? FAILED['POST']!);
}

/**
 * One request and its one reply: the watchdog answers 500 when nothing happens for
 * WATCHDOG_MS (each body chunk counts as progress), and a reply after it is dropped.
 */
class Exchange {
  private readonly res: http.ServerResponse;
  private readonly method: string;
  private readonly log: ProtocolContext['log'];
  private timer: NodeJS.Timeout | undefined;
  private done = false;

  constructor(res: http.ServerResponse, method: string, log: ProtocolContext['log']) {
    this.res = res;
    this.method = method;
    this.log = log;
    res.once('close', () => {
      this.done = true;
      clearTimeout(this.timer);
    });
    this.progress();
  }

  /** Something happened: the watchdog starts again. */
  progress(): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.log.warn({ method: this.method, url: this.res.req.url }, `rqms request made no progress for ${WATCHDOG_MS} ms`);
      this.send(json(500, INTERNAL_ERROR_JSON));
    }, WATCHDOG_MS);
  }

  /** Send the reply; false when one was sent already or the client has gone. */
  send(reply: Reply): boolean {
    if (this.done) return false;
    this.done = true;
    clearTimeout(this.timer);
    this.res.writeHead(reply.status, {
      'content-type': reply.type === 'json' ? 'application/json' : 'text/html; charset=utf-8',
      'content-length': Buffer.byteLength(reply.body),
    });
    this.res.end(reply.body);
    return true;
  }
}

/**
 * The whole body (each chunk is progress for the watchdog), or RQ_TOO_LARGE past
 * MAX_BODY_BYTES (declared or sent), or RQ_BUSY when it does not fit in the body budget
 * (lib/body-budget.ts). The 413 or 503 goes out at once and the rest of the body is read
 * and dropped (Node's own drain, bounded by the server's requestTimeout), so a client
 * that sends it all before reading gets the refusal rather than a broken pipe.
 */
async function readItemBody(r: Incoming): Promise<Buffer> {
  const read = await readBody(r.req, r.res, { max: MAX_BODY_BYTES, over: 'leave-to-node', onChunk: () => r.exchange.progress() });
  switch (read.kind) {
    case 'body':
      return read.bytes;
    case 'too-large':
      throw new RqError('RQ_TOO_LARGE', `request body over ${MAX_BODY_BYTES} bytes`);
    case 'busy':
      throw new RqError('RQ_BUSY', bodyBudget.refusal());
    case 'failed':
      throw read.error;
    case 'closed':
      throw new RqError('RQ_BAD_REQUEST', 'the client went away before the body ended');
  }
}

/** Strict UTF-8 that keeps a BOM, so a body starting with one is not JSON (RFC 8259 forbids the BOM). */
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** The body's JSON text, or undefined when it is not UTF-8 JSON. */
function jsonText(body: Buffer): string | undefined {
  try {
    const text = utf8.decode(body);
    JSON.parse(text);
    return text;
  } catch {
    return undefined;
  }
}

/** Form-encoded `key=value` pairs (`+` is a space), the first of each key; RQ_BAD_REQUEST for bad %-escapes. */
function parseQuery(query: string): Map<string, string> {
  const out = new Map<string, string>();
  const decode = (s: string): string => {
    try {
      return decodeURIComponent(s.replace(/\+/g, ' '));
    } catch {
      throw refuse('RQ_BAD_REQUEST', `I cannot read ${JSON.stringify(s)}: it is not %-escaped UTF-8.`);
    }
  };
  for (const pair of query.split('&')) {
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    const key = decode(eq < 0 ? pair : pair.slice(0, eq));
    if (!out.has(key)) out.set(key, eq < 0 ? '' : decode(pair.slice(eq + 1)));
  }
  return out;
}

function pathSegment(raw: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    throw refuse('RQ_BAD_REQUEST', `I cannot read ${JSON.stringify(raw)}: it is not %-escaped UTF-8.`);
  }
}

function checkQueue(name: string): string {
  if (!isProtocolQueueName(name)) {
    throw refuse('RQ_BAD_REQUEST', `${JSON.stringify(name)} will not do as a queue name: 1 to 255 of A-Z a-z 0-9 _ . - $ ( ) +, not beginning with a dot.`);
  }
  return name;
}

/** An item id or name: non-empty, at most 1024 bytes, not beginning with `_`. */
function checkItemId(id: string | undefined, what: string): string {
  if (id === undefined || id === '') throw refuse('RQ_BAD_REQUEST', `An item needs ${what}.`);
  if (id.startsWith('_')) throw refuse('RQ_BAD_REQUEST', `${JSON.stringify(id)} will not do: an item id may not begin with "_".`);
  if (Buffer.byteLength(id) > MAX_ID_BYTES) throw refuse('RQ_BAD_REQUEST', `That item id is ${Buffer.byteLength(id)} bytes long; ${MAX_ID_BYTES} is the most I take.`);
  return id;
}

/** The message fields of an item, for publish (POST) and set (PUT). */
function itemInput(id: string, value: string): PublishInput {
  return {
    src: 'rqms',
    payload: Buffer.from(value),
    max_count: 0,
    rank: 0,
    sort_key: Buffer.from(id).toString('hex'),
    requeue: 'place',
  };
}

/**
 * The `<hash>` of a ticket's `<rev>-<hash>`: CouchDB-like, and tied to its queue, its
 * item id and the message that holds it. An id deleted and posted again starts again at
 * the same revs, so the message (its short id) tells the old item's tickets from the new.
 */
function revHash(queue: string, id: string, msgId: string, rev: number): string {
  return createHash('sha256').update(JSON.stringify([queue, id, msgId, rev])).digest('hex').slice(0, 32);
}

/** A ticket's rev when this door issued it for this item (queue, id, message), else undefined. */
function ticketRev(queue: string, id: string, msgId: string, revText: string): number | undefined {
  const m = /^(\d{1,15})-([0-9a-f]{32})$/.exec(revText);
  if (!m) return undefined;
  const rev = Number(m[1]);
  return m[2] === revHash(queue, id, msgId, rev) ? rev : undefined;
}

/** A fetched item as JSON text: the payload exactly as posted, spliced in (numbers keep their digits). */
function itemJson(queue: string, job: PulledJob): string {
  const id = job.ext_id ?? job.id;
  const ticket = JSON.stringify([id, `${job.rev}-${revHash(queue, id, job.id, job.rev)}`]);
  const text = job.payload === null ? undefined : jsonText(Buffer.from(job.payload, 'base64'));
  const [param1 = null, param2 = null, param3 = null, param4 = null] = job.params;
  const value = text?.trim() ?? JSON.stringify({ msg_id: job.id, param1, param2, param3, param4 });
  return `{"ticket":${JSON.stringify(ticket)},"value":${value}}`;
}

/** `time`'s text: decimal seconds, perhaps with an exponent. */
const SECONDS_RE = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;

/**
 * The fetch query: `count`, a whole number of at least 1 (clamped to MAX_COUNT),
 * default 1; `time`, decimal seconds, default 10, as a TTR in ms (≤ 0 is a lock that has
 * already run out: TTR 0). A message is what the field must be.
 */
const FETCH_QUERY = v.object({
  count: v.optional(v.pipe(v.string(), v.regex(/^\d*[1-9]\d*$/, 'a whole number of at least 1'), v.transform((raw) => Math.min(Number(raw), MAX_COUNT))), '1'),
  time: v.optional(
    v.pipe(
      v.string(),
      v.check((raw) => SECONDS_RE.test(raw.trim()) && Number.isFinite(Number(raw)), 'a number of seconds'),
      v.transform((raw) => (Number(raw) <= 0 ? 0 : Math.min(Math.ceil(Number(raw) * 1000), MAX_TTR_MS))),
    ),
    String(DEFAULT_TIME_S),
  ),
});

/** A ticket: `[id, rev]`, as the fetch gave it. */
const TICKET = v.strictTuple([v.pipe(v.string(), v.nonEmpty()), v.string()]);

/** `value` checked by `schema`, or RQ_BAD_REQUEST worded by `say` from its first problem. */
function checked<S extends v.GenericSchema>(schema: S, value: unknown, say: (p: InputProblem) => string): v.InferOutput<S> {
  const result = checkInput(schema, value);
  if (!result.ok) throw refuse('RQ_BAD_REQUEST', say(result.problem));
  return result.value;
}

/** What the handlers get: the door's context, and which queues it may touch. */
interface RqmsDoor extends ProtocolContext {
  mayTouch: QueueAccess;
}

/** The request's queue: a good name, and one this door may touch (RQ_FORBIDDEN otherwise). */
function queueOf(ctx: RqmsDoor, r: Incoming): string {
  const queue = checkQueue(pathSegment(r.segments[0] ?? ''));
  if (!ctx.mayTouch(queue)) throw refuse('RQ_FORBIDDEN', 'That queue belongs to a protected lmstfy namespace; I have not been given leave to touch it.');
  return queue;
}

interface Incoming {
  segments: string[];
  query: string;
  req: http.IncomingMessage;
  res: http.ServerResponse;
  exchange: Exchange;
}

/** GET /<queue>?count&time: lease up to `count` items in id order; a reply nobody receives hands them back. */
async function fetchItems(ctx: RqmsDoor, r: Incoming): Promise<void> {
  const queue = queueOf(ctx, r);
  const { count, time: ttrMs } = checked(FETCH_QUERY, Object.fromEntries(parseQuery(r.query)), (p) => `${p.field} must be ${p.message}, got ${JSON.stringify(p.got)}.`);
  const jobs = await ctx.client.lease([queue], { owner: 'rqms', ttr_ms: ttrMs, count, wait_ms: 0 });
  if (r.exchange.send(json(200, `{"items":[${jobs.map((j) => itemJson(queue, j)).join(',')}]}`))) return;
  for (const job of jobs) {
    await ctx.client.nack(queue, job.id, { refund: true }).catch((e: unknown) => {
      ctx.log.warn({ queue, msg_id: job.id, err: explain(e) }, 'cannot hand back an undelivered lease; it ends at its time');
    });
  }
}

/** POST /<queue>?id=<id>: a new item; the id taken is RQ_DUPLICATE (409), the item unchanged. */
async function postItem(ctx: RqmsDoor, r: Incoming): Promise<Reply> {
  const queue = queueOf(ctx, r);
  const id = checkItemId(parseQuery(r.query).get('id'), 'an id: POST /<queue>?id=<id>');
  const value = jsonText(await readItemBody(r));
  if (value === undefined) throw refuse('RQ_BAD_MESSAGE', PHRASE.badValue);
  await ctx.client.publish(queue, { ...itemInput(id, value), ext_id: id });
  return html(201, PHRASE.posted);
}

/** PUT /<queue>/<name>: create or replace the item, whatever its state; its lock goes and old tickets go stale. */
async function setItem(ctx: RqmsDoor, r: Incoming): Promise<Reply> {
  const queue = queueOf(ctx, r);
  const raw = r.segments[1];
  const name = checkItemId(raw === undefined ? undefined : pathSegment(raw), 'a name: PUT /<queue>/<name>');
  const value = jsonText(await readItemBody(r));
  if (value === undefined) throw refuse('RQ_BAD_MESSAGE', PHRASE.badValue);
  await ctx.client.set(queue, name, itemInput(name, value));
  return html(201, PHRASE.set);
}

/**
 * DELETE /<queue> with a ticket (its JSON text, or that text JSON-encoded once more):
 * ack at the ticket's rev. 404 when no item has the id; 409 when the ticket is not for
 * the item that has it now (a rev this door did not issue for it, or an earlier item of
 * the same id), or its rev has changed since.
 */
async function deleteItem(ctx: RqmsDoor, r: Incoming): Promise<Reply> {
  const queue = queueOf(ctx, r);
  const text = jsonText(await readItemBody(r));
  if (text === undefined) throw refuse('RQ_BAD_REQUEST', PHRASE.badTicket);
  let ticket: unknown = JSON.parse(text);
  if (typeof ticket === 'string') ticket = jsonText(Buffer.from(ticket)) === undefined ? undefined : JSON.parse(ticket);
  const [id, revText] = checked(TICKET, ticket, () => 'A ticket is the JSON text ["<id>","<rev>"], given back as the fetch gave it.');
  const item = await ctx.client.peek(queue, id);
  if (item === null) throw new RqError('RQ_NOT_FOUND', 'msg not found');
  const rev = ticketRev(queue, id, item.id, revText);
  if (rev === undefined) throw new RqError('RQ_STALE', `ticket rev ${JSON.stringify(revText)} is not one of message ${item.id}`);
  await ctx.client.ack(queue, id, { rev, status: STATUS_DELETED });
  return html(200, PHRASE.deleted);
}

async function serve(ctx: RqmsDoor, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  const method = req.method ?? '';
  const exchange = new Exchange(res, method, ctx.log);
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  const r: Incoming = { segments: path.split('/').slice(1), query: q < 0 ? '' : url.slice(q + 1), req, res, exchange };
  try {
    if (path.includes('favicon.ico')) exchange.send(html(404, 'No favicon here.'));
    else if (method === 'GET') await fetchItems(ctx, r);
    else if (method === 'POST') exchange.send(await postItem(ctx, r));
    else if (method === 'PUT') exchange.send(await setItem(ctx, r));
    else if (method === 'DELETE') exchange.send(await deleteItem(ctx, r));
    else exchange.send(html(400, PHRASE.badMethod));
  } catch (e) {
    exchange.send(failureReply(method, e, ctx.log));
  }
}

/** The section's own key: `queues` (door-access.ts's). */
const SECTION = protocolSection({ queues: v.optional(v.unknown()) }, () => 'is not a key of the rqms front door (it has "port", "addr" and "queues")');

/** The section's own keys: `queues` besides `port` and `addr` (main-config.ts reads those); returns the patterns. */
export function parseRqmsSection(raw: Record<string, unknown>): RegExp[] {
  return parseQueuePatterns('rqms', parseConfigValue(SECTION, raw, 'protocols.rqms').queues);
}

export function rqmsServer(base: ProtocolContext): http.Server {
  const ctx: RqmsDoor = { ...base, mayTouch: doorAccess(base.namespaces, parseRqmsSection(base.section.raw)) };
  const hosts = browserHostNames(ctx.main, ctx.section.addr);
  // The head of a request within the watchdog's time too, the whole request (a body dropped after a 413 too) within 2 min.
  const timeouts = { headersTimeoutMs: WATCHDOG_MS, requestTimeoutMs: 120_000 };
  return createHttpServer((req, res) => {
    const refused = browserRefusal(req, hosts);
    if (refused === undefined) void serve(ctx, req, res);
    else if (req.method === 'GET') new Exchange(res, 'GET', ctx.log).send(json(refused.status, JSON.stringify({ error: true, message: refused.reason })));
    else new Exchange(res, req.method ?? '', ctx.log).send(html(refused.status, refused.reason));
  }, timeouts);
}
