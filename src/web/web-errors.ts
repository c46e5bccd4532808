/**
 * The web front door's one mapping from RqError codes to HTTP statuses, and the plain
 * bodies RQ sends for them (spec/rq.md §7.3, §10.4): `<status> - <text>`, except a few
 * texts RQ sends bare (`Queue creation not allowed at this time.`). Routes throw
 * `webError(...)` or let an RqError from a lower layer through; the error handler in
 * app.ts is the only place that turns either into a reply. Every 404 is then drawn as
 * the Not Found page (§7.1 step 8).
 */
import { RqError, type ErrorCode } from '../domain/errors.js';

const HTTP_STATUS = {
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
  RQ_DUPLICATE: 409,
  RQ_STALE: 409,
  RQ_NOT_PULL: 409,
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

/**
 * The reply body: RQ sends these as text/html, and a text may echo the request (a JSON
 * parse error, a file name), so `&`, `<` and `>` are escaped. RQ's quoted texts have none.
 */
export function bodyOf(e: RqError): string {
  const text = BARE.has(e) ? e.message : `${statusOf(e)} - ${e.message}`;
  return text.replace(/[&<>]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;' })[c]!);
}

/** RQ's "dump" of a reply array (Ruby's inspect: `["fail", "msg not found"]`). */
export function dump(reply: unknown): string {
  if (Array.isArray(reply)) return `[${reply.map((v) => JSON.stringify(v) ?? 'nil').join(', ')}]`;
  return JSON.stringify(reply) ?? 'nil';
}
