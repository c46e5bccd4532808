/**
 * Request parameters as RQ's routes see them (docs/http-api.md): query and form keys
 * nest (`a[b][]=v`, parsed by qs), both urlencoded and multipart bodies are read, and a
 * path parameter overrides a query or form parameter of the same name. A route checks a
 * parameter with a valibot schema (checkedParam), which names it in the 400.
 *
 * Multipart bodies are parsed by busboy. Every file part streams to its own temp file
 * (`RackMultipart-*`, as RQ named them) in os.tmpdir(), which is the config's `tmpdir`:
 * rq-mgr passes it to the web as TMPDIR. The queue hard-links what it keeps. A route
 * removes the temp files before it replies (removeUploads); whatever happened, they are
 * removed when the response is over. A bad multipart body, a limit hit, a temp file
 * that cannot be written, or a client that goes away mid-body stops busboy, closes every
 * temp file and removes it (before the error reply): no fd and no disk space stay behind. Bad multipart is a 400, a temp file that cannot be written a 500.
 *
 * Every body read into memory (form, JSON, multipart) is held in the web process's body
 * budget (lib/body-budget.ts) as its bytes arrive: a form or JSON body each chunk that
 * express's parser reads (budgeted), a multipart body each chunk, less what goes to its
 * files. The parsers do not inflate a compressed body (a `Content-Encoding` other than
 * identity is a 415), so the bytes that arrive are the bytes in memory.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import busboy from 'busboy';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import qs from 'qs';
import * as v from 'valibot';
import { coerceError, isNoSpace } from '../domain/errors.js';
import { checkInput } from '../domain/input-check.js';
import { BUSY_RETRY_AFTER_S, bodyBudget } from '../lib/body-budget.js';
import { webError } from './web-errors.js';

/** Nested keys go this deep (`mesg[a][b][c]`); deeper text stays a literal key. */
const QS_OPTIONS = { depth: 8, arrayLimit: 1000, parameterLimit: 10_000 } as const;
/** Form fields of one multipart body, together. File parts have no limit (they go to disk). */
const MULTIPART_FIELDS_LIMIT = 64 * 1024 * 1024;

export function parseQuery(text: string): Record<string, unknown> {
  return qs.parse(text, QS_OPTIONS);
}

export interface Upload {
  /** The temp file holding the part. */
  path: string;
  /** The file name the client gave (untrusted: the queue checks it). */
  filename: string;
  size: number;
}

/** Merged parameters: query, then body form fields, then path parameters. */
export function params(req: Request): Record<string, unknown> {
  const body = req.is('application/json') ? {} : (req.body as Record<string, unknown> | undefined);
  return { ...(req.query as Record<string, unknown>), ...(body ?? {}), ...req.params };
}

/**
 * The parameter `key` checked and shaped by `schema`, or a 400 `'<key>' must be <the
 * schema's message>, got <the value as JSON>`.
 */
export function checkedParam<S extends v.GenericSchema>(req: Request, key: string, schema: S): v.InferOutput<S> {
  const checked = checkInput(schema, params(req)[key]);
  if (checked.ok) return checked.value;
  throw webError('RQ_BAD_REQUEST', `'${key}' must be ${checked.problem.message}, got ${JSON.stringify(checked.problem.got)}`);
}

/** One parameter as a string, or undefined when absent or not a string. */
export function param(req: Request, name: string): string | undefined {
  const v = params(req)[name];
  return typeof v === 'string' ? v : undefined;
}

/** Whether a program asked for JSON (`x_format=json`, a form field or a query parameter) instead of RQ's redirect. */
export function wantsJson(req: Request): boolean {
  return param(req, 'x_format') === 'json';
}

export function uploads(res: Response): Record<string, Upload> {
  return (res.locals['uploads'] as Record<string, Upload> | undefined) ?? {};
}

/** Per multipart response: closes and removes its temp files (once, however often asked). */
const REMOVERS = new WeakMap<Response, () => Promise<void>>();

/** Remove the request's upload temp files now (a route does it before it replies). */
export async function removeUploads(res: Response): Promise<void> {
  await REMOVERS.get(res)?.();
}

/** The temp files of one multipart body, each with the stream writing it. */
function tempFiles(): { add(file: string, out: fs.WriteStream): void; remove(): Promise<void> } {
  const temps: { file: string; out: fs.WriteStream }[] = [];
  let removing: Promise<void> | undefined;
  /** Resolves once `out` has closed its fd (destroying it first when it is still writing). */
  const closed = (out: fs.WriteStream): Promise<void> =>
    new Promise((resolve) => {
      if (out.closed) {
        resolve();
        return;
      }
      out.once('close', () => resolve());
      out.destroy();
    });
  return {
    add: (file, out) => temps.push({ file, out }),
    // A stream still opening its file would create it after an early unlink: close first.
    remove: () =>
      (removing ??= Promise.all(temps.map(({ file, out }) => closed(out).then(() => fs.promises.rm(file, { force: true })))).then(
        () => undefined,
        () => undefined, // nothing better to do with a temp file that cannot be removed
      )),
  };
}

/** Read the rest of the body and drop it: true once it has ended, false when the client went away first. */
function readAway(req: Request): Promise<boolean> {
  const read = new Promise<boolean>((resolve) => {
    if (req.readableEnded) resolve(true);
    req.once('end', () => resolve(true));
    req.once('close', () => resolve(req.complete));
  });
  req.resume();
  return read;
}

/** A body refused for the body budget: 503 with `Retry-After` (web-errors.ts). */
function busy(res: Response): Error {
  res.setHeader('Retry-After', String(BUSY_RETRY_AFTER_S));
  return webError('RQ_BUSY', bodyBudget.refusal());
}

/**
 * Run `parser` (express.urlencoded or express.json, with `inflate: false`) with the
 * chunks it reads held in the body budget as they arrive. A chunk that does not fit
 * stops the parser: it is handed the refusal as its stream's error, so it reads the rest
 * of the body away and then passes the refusal on (a 503). The counting listener goes
 * before the parser's (prependListener, which does not start the stream either): it sees
 * each chunk the parser reads, and is removed once the parser is done. The parser
 * listens for 'error' while it reads; once it has stopped (over its limit, say) what
 * still comes is read away, not kept, and no longer counted. A body declared over the
 * parser's limit is refused (413) without being read.
 */
export function budgeted(parser: RequestHandler): RequestHandler {
  return (req: Request, res: Response, next: NextFunction) => {
    const count = (chunk: Buffer): void => {
      const reading = req.listenerCount('error') > 0;
      if (reading && bodyBudget.hold(res, chunk.length)) return;
      req.off('data', count);
      if (!reading) return;
      bodyBudget.letGo(res);
      req.emit('error', busy(res));
    };
    req.prependListener('data', count);
    void parser(req, res, (err?: unknown) => {
      req.off('data', count);
      if (err !== undefined) bodyBudget.letGo(res); // the body is not kept
      next(err);
    });
  };
}

/** Parse a multipart/form-data body into `req.body` (fields) and `uploads(res)` (files). */
export function multipart(): RequestHandler {
  return (req: Request, res: Response, next: NextFunction) => {
    if (!req.is('multipart/form-data')) {
      next();
      return;
    }
    let bb: busboy.Busboy;
    try {
      bb = busboy({ headers: req.headers, preservePath: true, limits: { fieldSize: MULTIPART_FIELDS_LIMIT, fields: 10_000, files: 100 } });
    } catch (e) {
      next(webError('RQ_BAD_REQUEST', `Bad multipart body: ${coerceError(e).message}`));
      return;
    }
    const temps = tempFiles();
    REMOVERS.set(res, () => temps.remove());
    res.on('close', () => void temps.remove());
    const fields: [string, string][] = [];
    const files: Record<string, Upload> = {};
    const writes: Promise<void>[] = [];
    let fieldBytes = 0;
    /** Busboy is done: parsed to the end, or stopped. */
    let over = false;
    /** Stop reading the body, close and remove every temp file; the body is not kept. */
    const stop = (): Promise<void> => {
      over = true;
      bodyBudget.letGo(res);
      req.unpipe(bb);
      bb.destroy();
      return temps.remove();
    };
    /**
     * Stop, read the rest of the body away, then reply with `e` (no temp file left by
     * then). A reply before the end of the body would close the connection, and a client
     * still sending (fetch, for one) would lose the reply to an EPIPE.
     */
    const fail = (e: Error): void => {
      if (over) return;
      const stopped = stop();
      void Promise.all([readAway(req), stopped]).then(([whole]) => {
        if (whole) next(e); // else the client went away: nobody to answer
      });
    };
    // The client went away before the body was complete: nobody to answer.
    req.on('close', () => {
      if (!over && !req.complete) void stop();
    });
    // The body's bytes are held in the budget as they come, less those that go to a file.
    req.on('data', (chunk: Buffer) => {
      if (!over && !bodyBudget.hold(res, chunk.length)) fail(busy(res));
    });
    bb.on('field', (name, value, info) => {
      fieldBytes += name.length + value.length;
      if (info.valueTruncated || fieldBytes > MULTIPART_FIELDS_LIMIT) {
        fail(webError('RQ_TOO_LARGE', `Multipart form fields are over ${MULTIPART_FIELDS_LIMIT} bytes`));
        return;
      }
      fields.push([name, value]);
    });
    bb.on('file', (name, stream, info) => {
      const tmp = path.join(os.tmpdir(), `RackMultipart-${crypto.randomUUID()}`);
      const out = fs.createWriteStream(tmp, { flags: 'wx', mode: 0o600 });
      temps.add(tmp, out);
      stream.on('data', (chunk: Buffer) => bodyBudget.release(res, chunk.length));
      // Handled at once: a full disk is a 507, another open or write failure (EMFILE, no tmpdir) a 500, never an unhandled rejection.
      writes.push(
        pipeline(stream, out).then(
          () => {
            files[name] = { path: tmp, filename: info.filename ?? '', size: out.bytesWritten };
          },
          (e: unknown) =>
            fail(
              isNoSpace(e)
                ? webError('RQ_NO_SPACE', 'Could not store the upload: no space left on device for temporary files')
                : webError('RQ_IO', `Could not store the upload: ${coerceError(e).message}`),
            ),
        ),
      );
    });
    bb.on('error', (e) => fail(webError('RQ_BAD_REQUEST', `Bad multipart body: ${coerceError(e).message}`)));
    bb.on('partsLimit', () => fail(webError('RQ_TOO_LARGE', 'Too many multipart parts')));
    bb.on('filesLimit', () => fail(webError('RQ_TOO_LARGE', 'Too many multipart files')));
    bb.on('fieldsLimit', () => fail(webError('RQ_TOO_LARGE', 'Too many multipart fields')));
    bb.on('close', () => {
      void Promise.all(writes).then(() => {
        if (over) return;
        over = true;
        req.body = parseQuery(new URLSearchParams(fields).toString());
        res.locals['uploads'] = files;
        next();
      });
    });
    req.pipe(bb);
  };
}

/** A whole-number parameter (`page`, `limit`) of at least `min`, nine digits at most; absent or empty is `fallback`. */
export function wholeNumber(min: number, fallback: number) {
  const want = `a whole number, at least ${min}`;
  const text = v.pipe(v.string(want), v.regex(/^(\d{1,9})?$/, want), v.check((t) => t === '' || Number(t) >= min, want));
  return v.optional(v.pipe(text, v.transform((t) => (t === '' ? fallback : Number(t)))), '');
}

/** The `page` parameter of a paged listing: 1 when absent. */
export const PAGE_PARAM = wholeNumber(1, 1);
