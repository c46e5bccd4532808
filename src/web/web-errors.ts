/**
 * The web front door's one mapping from RqError codes to HTTP statuses, the one-line
 * reason of an error, and the plain bodies RQ sends for them:
 * `<status> - <text>`, except a few texts RQ sends bare (`Queue creation not allowed at
 * this time.`). Routes throw `webError(...)`, or `refused(...)` for a queue's coded
 * refusal, or let an RqError from a lower layer through; the error handler in app.ts is
 * the only place that turns either into a reply (JSON, a page, or this plain body).
 */
import { asRq, isRefusal, refusalCode, type RqRefusal } from '../client/refusal.js';
import { RqError, type ErrorCode } from '../domain/errors.js';
import type { Fail } from '../rpc/queue-api.js';

export const HTTP_STATUS = {
  RQ_NOT_FOUND: 404,
  RQ_QUEUE_NOT_FOUND: 404,
  RQ_NOT_IN_STATE: 409,
  RQ_BAD_MESSAGE: 400,
  RQ_BAD_REQUEST: 400,
  RQ_QUEUE_DOWN: 503,
  RQ_ATTACH: 400,
  RQ_IO: 500,
  RQ_PROTOCOL: 502,
  RQ_CONFIG: 500,
  RQ_FORBIDDEN: 403,
  RQ_UPSTREAM: 500,
  RQ_TOO_LARGE: 413,
  RQ_BUSY: 503,
  RQ_ENCODED_BODY: 415,
  RQ_DUPLICATE: 409,
  RQ_STALE: 409,
  RQ_NOT_PULL: 409,
  RQ_UNAVAILABLE: 503,
  RQ_OUTCOME_UNKNOWN: 503,
  // Insufficient Storage (RFC 4918): the request was fine, and can be sent again once the disk has room.
  RQ_NO_SPACE: 507,
} as const satisfies Record<ErrorCode, number>;

/** An error whose body is exactly `text` (RQ's bare texts), not `<status> - <text>`. */
const BARE = new WeakSet<RqError>();

/** A route's failure: the reply is `<status> - <text>` with the status of `code`. */
export function webError(code: ErrorCode, text: string, opts: { bare?: boolean } = {}): RqError {
  const e = new RqError(code, text);
  if (opts.bare) BARE.add(e);
  return e;
}

export function statusOf(e: RqError): number {
  return HTTP_STATUS[e.code];
}

/** The reason of a reply, on one line: a control character or line separator it echoes from the request (`%0A` in a name) is written `\u000a`. */
export function reasonOf(e: RqError): string {
  return e.message.replace(/[\x00-\x1f\x7f-\x9f\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/**
 * The plain reply body: RQ sends these as text/html, and a text may echo the request (a
 * JSON parse error, a file name), so `&`, `<` and `>` are escaped. RQ's quoted texts have none.
 */
export function bodyOf(e: RqError): string {
  const text = BARE.has(e) ? reasonOf(e) : `${statusOf(e)} - ${reasonOf(e)}`;
  return text.replace(/[&<>]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;' })[c]!);
}

/** RQ's "dump" of a reply array (Ruby's inspect: `["fail", "msg not found"]`). */
export function dump(reply: unknown): string {
  if (Array.isArray(reply)) return `[${reply.map((v) => JSON.stringify(v) ?? 'nil').join(', ')}]`;
  return JSON.stringify(reply) ?? 'nil';
}

/** A reply as a route passes it on: a refusal in RQ's shape (`["fail", text]`, without the code), anything else as it is. */
export function rqReply<T>(reply: T | Fail | [false, string]): T | RqRefusal {
  return isRefusal(reply) ? asRq(reply) : reply;
}

/**
 * A queue's refusal for a full disk, `["fail", "no space left on device: queues/<q>",
 * "RQ_NO_SPACE"]`, as a route's failure (507 with that text); undefined for any other reply.
 */
export function noSpace(reply: unknown): RqError | undefined {
  return isRefusal(reply) && refusalCode(reply) === 'RQ_NO_SPACE' ? webError('RQ_NO_SPACE', reply[1]) : undefined;
}

/**
 * A refusal (of a queue or of rq-mgr) as a route's failure: RQ's text, `<what> <dump of
 * ["fail", text]>.`, with the status of the refusal's code (404 for a missing message,
 * 409 for one in the wrong state; 500 for a refusal that names no code).
 */
export function refused(what: string, reply: Fail | [false, string]): RqError {
  return webError(refusalCode(reply), `${what} ${dump(asRq(reply))}.`);
}
