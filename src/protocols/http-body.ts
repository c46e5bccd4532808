/**
 * Reading a request body under a size limit, for the pull front doors (Cloudq, lmstfy,
 * RQMS). This module owns the counting against the limit (the declared Content-Length
 * and the bytes as they come), what becomes of a body over it (how much of the rest is
 * still read and dropped, and whether the connection must close after the refusal), and
 * telling a body that ended from a request that failed or closed first. It also holds
 * the body's bytes in the web process's body budget (lib/body-budget.ts), each chunk as
 * it arrives (what is in memory, never the declared length), until the response is over;
 * a body whose next chunk does not fit is refused as `busy`, as one over the limit is
 * (the same reading and dropping, and closing), with `Retry-After` set on the response.
 * It sends nothing: each door turns the outcome into its own reply (status, words,
 * headers).
 */
import type http from 'node:http';
import { BUSY_RETRY_AFTER_S, bodyBudget } from '../lib/body-budget.js';

export interface BodyLimit {
  /** The most bytes a body may have. */
  max: number;
  /**
   * A body over `max`:
   * - `{ drainUpTo: n }` (n ≥ max): the rest is read and dropped to its end, and then
   *   refused with the connection kept, so a client that sends it all before it reads
   *   gets the refusal rather than a reset; a body declared or sent beyond n bytes in all
   *   is refused at once, the rest left unread, and the connection must close.
   * - `'drop-and-close'`: refused at once; the rest is read and dropped as it comes
   *   while the reply goes out, and the connection must close.
   * - `'leave-to-node'`: refused at once, the connection kept; the rest is left to Node,
   *   which reads and drops it after the reply (bounded by the server's requestTimeout).
   */
  over: { drainUpTo: number } | 'drop-and-close' | 'leave-to-node';
  /** Called after each chunk kept (within `max`). */
  onChunk?: () => void;
}

export type BodyRead =
  | { kind: 'body'; bytes: Buffer }
  /**
   * Over the limit (`too-large`), or not within the body budget (`busy`, with
   * `Retry-After` set on the response); `close`: the reply must close the connection.
   */
  | { kind: 'too-large' | 'busy'; close: boolean }
  /** The request emitted 'error' before its end. */
  | { kind: 'failed'; error: unknown }
  /** The request closed before its end; `received`: the body when all of it (within `max`) had come by then (`req.complete`). */
  | { kind: 'closed'; received: Buffer | undefined };

/**
 * Read the body of `req` within `limit` (see BodyLimit for what happens past it), its
 * bytes held in the body budget for `res`, the response to `req`, each chunk as it comes
 * (never more than `max`, what is kept). A declared length over the limit refuses the
 * body at once, but is never held: a client that declares much and sends little holds
 * only what it sent.
 */
export function readBody(req: http.IncomingMessage, res: http.ServerResponse, limit: BodyLimit): Promise<BodyRead> {
  const { max, over, onChunk } = limit;
  const drains = typeof over === 'object';
  const drainUpTo = drains ? over.drainUpTo : max;
  const close = over !== 'leave-to-node';
  const declared = Number(req.headers['content-length']);
  const known = Number.isFinite(declared);
  if (known && declared > drainUpTo) {
    if (over === 'drop-and-close') req.resume();
    return Promise.resolve({ kind: 'too-large', close });
  }
  /** Why the body is refused, once it is. */
  let refused: 'too-large' | 'busy' | undefined;
  const refuse = (why: 'too-large' | 'busy'): void => {
    refused = why;
    if (why === 'busy' && !res.headersSent) res.setHeader('Retry-After', String(BUSY_RETRY_AFTER_S));
    bodyBudget.letGo(res);
  };
  if (known && declared > max) refuse('too-large');
  if (refused !== undefined && !drains) {
    if (over === 'drop-and-close') req.resume();
    return Promise.resolve({ kind: refused, close });
  }
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const settle = (r: BodyRead): void => {
      if (settled) return;
      settled = true;
      // The stream keeps flowing without this listener: what still comes is dropped.
      req.removeListener('data', onData);
      if (r.kind !== 'body') bodyBudget.letGo(res);
      resolve(r);
    };
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (refused === undefined && size > max) refuse('too-large');
      else if (refused === undefined && !bodyBudget.hold(res, chunk.length)) refuse('busy');
      if (refused === undefined) {
        chunks.push(chunk);
        onChunk?.();
        return;
      }
      chunks.length = 0;
      if (!drains) settle({ kind: refused, close });
      else if (size > drainUpTo) {
        req.pause();
        settle({ kind: refused, close: true });
      }
    };
    req.on('data', onData);
    req.once('end', () => settle(refused ? { kind: refused, close: false } : { kind: 'body', bytes: Buffer.concat(chunks) }));
    req.once('error', (error: unknown) => settle({ kind: 'failed', error }));
    req.once('close', () => settle({ kind: 'closed', received: req.complete && refused === undefined ? Buffer.concat(chunks) : undefined }));
  });
}
