/**
 * The lmstfy front door's wire rules (docs/doors/lmstfy.md), as pure functions: the name
 * checks, the queries (valibot schemas, whose messages are lmstfy's), the
 * job attributes of a publish's headers, the bulk body split into the raw JSON
 * text of its elements, the job object, and the one table from RqError
 * codes to lmstfy's replies. Nothing here does I/O; the routes (lmstfy.ts) and handlers
 * (lmstfy-api.ts, lmstfy-admin.ts) call these and render.
 */
import { decodeTime } from 'ulid';
import * as v from 'valibot';
import { isShortId } from '../domain/ids.js';
import { type ErrorCode } from '../domain/errors.js';
import { checkInput } from '../domain/input-check.js';
import { attributesProblem } from '../domain/message.js';
import { isProtocolQueueName, MAX_QUEUE_NAME } from '../domain/names.js';
import type { PulledJob } from './pull-client.js';

/** A reply: status and JSON body (undefined for a 204). */
export interface Reply {
  status: number;
  body?: unknown;
  /** Close the connection after the reply (a body left unread). */
  close?: boolean;
  headers?: Record<string, string>;
  /** A body sent as it is, with its content type, in place of `body`'s JSON (`/metrics`). */
  raw?: { type: string; text: string };
}

export const fail = (status: number, error: string): Reply => ({ status, body: { error } });

/** lmstfy's limits. */
export const LIMITS = {
  /** The longest namespace or queue name, in bytes. */
  nameBytes: 255,
  /** One job body, in bytes. */
  jobBytes: 65_535,
  /** Jobs in one bulk publish. */
  bulkJobs: 64,
  /** Jobs in one consume. */
  consumeCount: 100,
  uint32: 4_294_967_295,
  uint16: 65_535,
} as const;

/** lmstfy's defaults, in seconds. */
export const DEFAULTS = {
  ttlS: 86_400,
  delayS: 0,
  tries: 1,
  ttrS: 120,
  timeoutS: 0,
  /** Respawn's `ttl`. */
  respawnTtlS: 86_400,
} as const;

const NAME_RE = /^[-_A-Za-z0-9]+$/;
const CONSUME_QUEUES_RE = /^[-_,A-Za-z0-9]+$/;

/** The rq queue of an lmstfy queue: `<namespace>.<queue>`. */
export const rqQueue = (namespace: string, queue: string): string => `${namespace}.${queue}`;

/** The name checks of every /api route but consume: the first failing check's reply, or undefined. */
export function checkNames(namespace: string, queue: string): Reply | undefined {
  if (Buffer.byteLength(namespace) > LIMITS.nameBytes || Buffer.byteLength(queue) > LIMITS.nameBytes) {
    return fail(400, 'namespace or queue name too long');
  }
  if (!NAME_RE.test(namespace)) return fail(400, 'namespace name contains forbidden characters');
  if (queue.startsWith('_') || !NAME_RE.test(queue)) return fail(400, 'queue name contains forbidden characters');
  // The rq queue's name must fit the protocols' rule too.
  if (rqQueue(namespace, queue).length > MAX_QUEUE_NAME || !isProtocolQueueName(rqQueue(namespace, queue))) {
    return fail(400, 'namespace or queue name too long');
  }
  return undefined;
}

/** The name checks of consume: the namespace as above, the queue part `^[-_,A-Za-z0-9]+$`. */
export function checkConsumeNames(namespace: string, queues: string): Reply | undefined {
  if (Buffer.byteLength(namespace) > LIMITS.nameBytes) return fail(400, 'namespace or queue name too long');
  if (!NAME_RE.test(namespace)) return fail(400, 'namespace name contains forbidden characters');
  if (!CONSUME_QUEUES_RE.test(queues)) return fail(400, 'queue name contains forbidden characters');
  return undefined;
}

/** A namespace may carry tokens when it passes the /api namespace checks. */
export function isNamespace(namespace: string): boolean {
  return Buffer.byteLength(namespace) <= LIMITS.nameBytes && NAME_RE.test(namespace);
}

/** A query's keys, each with its first value (as gin's Query reads them). */
function queryFields(query: URLSearchParams): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const [key, value] of query) fields[key] ??= value;
  return fields;
}

/** `query` checked by `schema`: its value, or the 400 with the schema's message. */
function checkQuery<S extends v.GenericSchema>(schema: S, query: URLSearchParams): v.InferOutput<S> | Reply {
  const checked = checkInput(schema, queryFields(query));
  return checked.ok ? checked.value : fail(400, checked.problem.message);
}

/**
 * The query integer `name` as Go's strconv.ParseUint reads it (plain decimal digits, no
 * sign), within min..max, else `invalid <name>`. An absent key gives `dflt`; a key that
 * is there but empty is invalid, as gin's DefaultQuery hands the empty text on.
 */
const uintParam = (name: string, dflt: number, max: number, min = 0) =>
  v.message(v.optional(v.pipe(v.string(), v.regex(/^\d+$/), v.transform(Number), v.minValue(min), v.maxValue(max)), String(dflt)), `invalid ${name}`);

/** The query integer `name` as Go's strconv.ParseInt reads it (an optional sign, then digits), at least `min`, else `invalid <name>`. */
const intParam = (name: string, dflt: number, min: number) =>
  v.message(v.optional(v.pipe(v.string(), v.regex(/^[+-]?\d+$/), v.transform(Number), v.safeInteger(), v.minValue(min)), String(dflt)), `invalid ${name}`);

/**
 * The publish query (also republish's and bulk's), in two steps so that its checks run in
 * lmstfy's order: `delay`, `ttl`, the two together, then `tries`.
 */
const PUBLISH_QUERY = v.pipe(
  v.looseObject({ delay: uintParam('delay', DEFAULTS.delayS, LIMITS.uint32), ttl: uintParam('ttl', DEFAULTS.ttlS, LIMITS.uint32) }),
  v.check(({ delay, ttl }) => ttl === 0 || ttl >= delay, 'ttl is shorter than delay'),
  v.object({
    delay: v.number(),
    ttl: v.number(),
    tries: v.pipe(uintParam('tries', DEFAULTS.tries, LIMITS.uint16), v.minValue(1, "tries shouldn't be zero")),
  }),
);

export interface PublishQuery {
  delayS: number;
  ttlS: number;
  tries: number;
}

export function parsePublishQuery(query: URLSearchParams): PublishQuery | Reply {
  const q = checkQuery(PUBLISH_QUERY, query);
  return isReply(q) ? q : { delayS: q.delay, ttlS: q.ttl, tries: q.tries };
}

/** The header that makes a publish a versioned job, which carries attributes. */
const VERSION_HEADER = 'enable-job-version';
/** Each header `Job-Attr-<name>` of a versioned job's publish gives attribute `<name>`. */
const ATTR_PREFIX = 'job-attr-';
const UTF8 = new TextDecoder('utf-8', { fatal: true });

/**
 * The job attributes of a publish (`headers` is the request's headersDistinct): with
 * `Enable-Job-Version: YES` (in any case), each header `Job-Attr-<name>` gives the
 * attribute `<name>`, lower-cased as header names are read, whose value is the header's
 * (its first, when repeated), its bytes read as UTF-8. Without that header there are
 * none (undefined), whatever `Job-Attr-*` headers came, and none given is undefined too.
 * Attributes that break the limits of domain/message.ts, or a value that is not UTF-8,
 * are a 400 whose message says which.
 */
export function parseJobAttributes(headers: NodeJS.Dict<string[]>): Record<string, string> | undefined | Reply {
  if (headers[VERSION_HEADER]?.[0]?.toUpperCase() !== 'YES') return undefined;
  const pairs: Array<[string, string]> = [];
  for (const [header, values] of Object.entries(headers)) {
    const value = values?.[0];
    if (!header.startsWith(ATTR_PREFIX) || header.length === ATTR_PREFIX.length || value === undefined) continue;
    const name = header.slice(ATTR_PREFIX.length);
    try {
      // Node reads a header's bytes one to a character (latin1): the client's bytes, back.
      pairs.push([name, UTF8.decode(Buffer.from(value, 'latin1'))]);
    } catch {
      return fail(400, `attribute ${JSON.stringify(name)} is not UTF-8 text`);
    }
  }
  // fromEntries keeps every name as its own key (`__proto__` too, which the check refuses).
  const attributes = Object.fromEntries(pairs);
  const problem = attributesProblem(attributes);
  if (problem !== undefined) return fail(400, problem);
  return Object.keys(attributes).length === 0 ? undefined : attributes;
}

/** The consume query, checked in lmstfy's order. */
const CONSUME_QUERY = v.object({
  ttr: uintParam('ttr', DEFAULTS.ttrS, LIMITS.uint32),
  timeout: uintParam('timeout', DEFAULTS.timeoutS, LIMITS.uint32),
  count: uintParam('count', 1, LIMITS.consumeCount, 1),
});

/** The consume query; `queues` are the listed names, empty parts dropped, duplicates too. */
export interface ConsumeQuery {
  ttrS: number;
  timeoutS: number;
  count: number;
  queues: string[];
}

export function parseConsumeQuery(query: URLSearchParams, queuePart: string): ConsumeQuery | Reply {
  const q = checkQuery(CONSUME_QUERY, query);
  if (isReply(q)) return q;
  const queues = [...new Set(queuePart.split(',').filter((name) => name !== ''))];
  if (queues.length === 0) return fail(400, 'invalid queue name(s)');
  return { ttrS: q.ttr, timeoutS: q.timeout, count: q.count, queues };
}

/** The dead letter's queries: how many jobs (`limit`), and a respawned job's `ttl` in seconds. */
const RESPAWN_QUERY = v.object({ limit: intParam('limit', 1, 1), ttl: intParam('ttl', DEFAULTS.respawnTtlS, 0) });
const DELETE_DEAD_QUERY = v.object({ limit: RESPAWN_QUERY.entries.limit });

export const parseRespawnQuery = (query: URLSearchParams): { limit: number; ttl: number } | Reply => checkQuery(RESPAWN_QUERY, query);
export const parseDeleteDeadQuery = (query: URLSearchParams): { limit: number } | Reply => checkQuery(DELETE_DEAD_QUERY, query);

export const isReply = (v: unknown): v is Reply => typeof v === 'object' && v !== null && 'status' in v;

const ULID_RE = /^[0-9A-HJKMNP-TV-Z]{26}$/i;

/**
 * The ref of a job id a client names: a ULID (the ids this door mints; upper case, as
 * they are kept), or an rq short id (what an RQ-native message without an external id
 * shows as its job_id). Anything else names no job (undefined), so it never reaches a
 * queue process.
 */
export function jobRef(id: string): string | undefined {
  if (ULID_RE.test(id)) return id.toUpperCase();
  return isShortId(id) ? id : undefined;
}

/** lmstfy's job object (without `msg`). `queue` is the lmstfy queue name it is shown under. */
export interface JobObject {
  namespace: string;
  queue: string;
  job_id: string;
  data: string;
  ttl: number;
  elapsed_ms: number;
  remain_tries: number;
  /** A versioned job's attributes; absent when it has none. */
  attributes?: Record<string, string>;
}

/** The id a job shows: its external id, or (an RQ-native message) its rq short id. */
export const jobIdOf = (job: PulledJob): string => job.ext_id ?? job.id;

export function jobObject(job: PulledJob, namespace: string, queue: string, now = Date.now()): JobObject {
  let born = job.created_ms;
  if (job.ext_id !== null && ULID_RE.test(job.ext_id)) {
    try {
      born = decodeTime(job.ext_id.toUpperCase());
    } catch {
      // not a ULID after all: its creation time stands
    }
  }
  const [param1, param2, param3, param4] = job.params;
  const data =
    job.payload ?? Buffer.from(JSON.stringify({ param1: param1 ?? null, param2: param2 ?? null, param3: param3 ?? null, param4: param4 ?? null })).toString('base64');
  // A message not counted by tries (RQ-native) shows what its max_count leaves.
  const tries = job.tries ?? (job.max_count > 0 ? Math.max(0, job.max_count - job.count) : 0);
  return {
    namespace,
    queue,
    job_id: jobIdOf(job),
    data,
    ttl: job.expires_at === null ? 0 : Math.max(0, Math.round((job.expires_at - now) / 1000)),
    elapsed_ms: Math.max(0, now - born),
    remain_tries: tries,
    ...(job.attributes !== null ? { attributes: job.attributes } : {}),
  };
}

/**
 * The raw JSON text of each element of a JSON array, byte for byte as it stands in
 * `body` (Go's []json.RawMessage), or undefined when `body` is not a JSON array.
 * JSON.parse checks the syntax first, so the scan only has to find where each element
 * starts and ends: structure characters are ASCII, so it walks the bytes.
 */
export function splitJsonArray(body: Buffer): Buffer[] | undefined {
  try {
    if (!Array.isArray(JSON.parse(body.toString('utf8')))) return undefined;
  } catch {
    return undefined;
  }
  const WS = new Set([0x20, 0x09, 0x0a, 0x0d]);
  const skipWs = (i: number): number => {
    while (i < body.length && WS.has(body[i]!)) i++;
    return i;
  };
  const skipString = (i: number): number => {
    // body[i] is the opening quote.
    for (i++; body[i] !== 0x22; i++) if (body[i] === 0x5c) i++;
    return i + 1;
  };
  const skipValue = (i: number): number => {
    const c = body[i];
    if (c === 0x22) return skipString(i);
    if (c === 0x5b || c === 0x7b) {
      let depth = 0;
      for (;;) {
        const b = body[i];
        if (b === 0x22) {
          i = skipString(i);
          continue;
        }
        if (b === 0x5b || b === 0x7b) depth++;
        else if (b === 0x5d || b === 0x7d) depth--;
        i++;
        if (depth === 0) return i;
      }
    }
    while (i < body.length && !WS.has(body[i]!) && body[i] !== 0x2c && body[i] !== 0x5d) i++;
    return i;
  };
  const out: Buffer[] = [];
  let i = skipWs(0) + 1; // past '['
  i = skipWs(i);
  if (body[i] === 0x5d) return out;
  for (;;) {
    const start = i;
    i = skipValue(i);
    out.push(body.subarray(start, i));
    i = skipWs(i);
    if (body[i] !== 0x2c) return out; // ']'
    i = skipWs(i + 1);
  }
}

/**
 * The one table from RqError codes to lmstfy replies. Most codes can only come from a
 * bug or a broken install (this door checks its input before it calls), so they are the
 * lmstfy's `500 {"error":"internal error"}`, and the detail goes to the log.
 */
export const ERROR_REPLIES = {
  RQ_NOT_FOUND: { status: 404, error: 'job not found' },
  RQ_NOT_IN_STATE: { status: 404, error: 'job not found' },
  RQ_BAD_MESSAGE: { status: 500, error: 'internal error' },
  RQ_BAD_REQUEST: { status: 500, error: 'internal error' },
  RQ_QUEUE_DOWN: { status: 503, error: 'queue is down' },
  RQ_QUEUE_NOT_FOUND: { status: 500, error: 'internal error' },
  RQ_ATTACH: { status: 500, error: 'internal error' },
  RQ_IO: { status: 500, error: 'internal error' },
  RQ_PROTOCOL: { status: 500, error: 'internal error' },
  RQ_CONFIG: { status: 500, error: 'internal error' },
  RQ_FORBIDDEN: { status: 403, error: 'forbidden' },
  RQ_UPSTREAM: { status: 500, error: 'internal error' },
  RQ_TOO_LARGE: { status: 413, error: 'body too large' },
  RQ_BUSY: { status: 503, error: 'server busy, try again later' },
  RQ_ENCODED_BODY: { status: 415, error: 'compressed bodies are not read' },
  RQ_DUPLICATE: { status: 500, error: 'internal error' },
  RQ_STALE: { status: 500, error: 'internal error' },
  RQ_NOT_PULL: { status: 400, error: 'the queue runs a script, so it cannot be used through lmstfy' },
  RQ_UNAVAILABLE: { status: 503, error: 'the queue is restarting, try again later' },
  RQ_OUTCOME_UNKNOWN: { status: 503, error: 'the queue stopped before it answered: the request may have been done' },
  RQ_NO_SPACE: { status: 507, error: 'no space left on device' },
} as const satisfies Record<ErrorCode, { status: number; error: string }>;
