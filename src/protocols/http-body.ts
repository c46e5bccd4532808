/**
 * Reading a request body under a size limit, for the pull front doors (Cloudq, lmstfy,
 * RQMS). This module owns the counting against the limit (the declared Content-Length
 * and the bytes as they come), what becomes of a body over it (how much of the rest is
 * still read and dropped, and whether the connection must close after the refusal), and
 * telling a body that ended from a request that failed or closed first. It sends
 * nothing: each door turns the outcome into its own reply (status, words, headers).
 */
import type http from 'node:http';

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
  /** Over the limit; `close`: the reply must close the connection. */
  | { kind: 'too-large'; close: boolean }
  /** The request emitted 'error' before its end. */
  | { kind: 'failed'; error: unknown }
  /** The request closed before its end; `received`: the body when all of it (within `max`) had come by then (`req.complete`). */
  | { kind: 'closed'; received: Buffer | undefined };

/** Read the body of `req` within `limit` (see BodyLimit for what happens past it). */
export function readBody(req: http.IncomingMessage, limit: BodyLimit): Promise<BodyRead> {
  const { max, over, onChunk } = limit;
  const drainUpTo = typeof over === 'object' ? over.drainUpTo : max;
  const tooLarge: BodyRead = { kind: 'too-large', close: over !== 'leave-to-node' };
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > drainUpTo) {
    if (over === 'drop-and-close') req.resume();
    return Promise.resolve(tooLarge);
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
      resolve(r);
    };
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size <= max) {
        chunks.push(chunk);
        onChunk?.();
      } else if (size > drainUpTo) {
        if (typeof over === 'object') req.pause();
        settle(tooLarge);
      } else chunks.length = 0;
    };
    req.on('data', onData);
    req.once('end', () => settle(size > max ? { kind: 'too-large', close: false } : { kind: 'body', bytes: Buffer.concat(chunks) }));
    req.once('error', (error: unknown) => settle({ kind: 'failed', error }));
    req.once('close', () => settle({ kind: 'closed', received: req.complete && size <= max ? Buffer.concat(chunks) : undefined }));
  });
}
