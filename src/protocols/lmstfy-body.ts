/**
 * The request bodies of the lmstfy door: a body of at most so many bytes, or the reply
 * that refuses it, and the admin routes' form. Both read through http-body.ts, so the
 * web process's body budget covers them.
 */
import type http from 'node:http';
import { readBody } from './http-body.js';
import { ERROR_REPLIES, fail, isReply, type Reply } from './lmstfy-wire.js';

/** An admin form body (description, token, pool). */
const FORM_BODY_BYTES = 64 * 1024;

/**
 * A request body of at most `max` bytes, or its refusal: a longer one is a 413, and one
 * that does not fit in the body budget (lib/body-budget.ts) a 503 with `Retry-After`,
 * that close the connection (the rest is read and dropped meanwhile); one cut short is a 400.
 */
export async function readBytes(req: http.IncomingMessage, res: http.ServerResponse, max: number): Promise<Buffer | Reply> {
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
export async function readForm(req: http.IncomingMessage, res: http.ServerResponse): Promise<URLSearchParams | Reply> {
  const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/x-www-form-urlencoded') return new URLSearchParams();
  const body = await readBytes(req, res, FORM_BODY_BYTES);
  return isReply(body) ? body : new URLSearchParams(body.toString('utf8'));
}
