/**
 * Request parameters as RQ's routes see them (spec/rq.md §7.2): query and form keys
 * nest (`a[b][]=v`, parsed by qs), both urlencoded and multipart bodies are read, and a
 * path parameter overrides a query or form parameter of the same name.
 *
 * Multipart bodies are parsed by busboy. Every file part streams to its own temp file in
 * the config's `tmpdir` (`RackMultipart-*`, as RQ named them), which is removed when the
 * response is over, whatever happened; the queue hard-links what it keeps. Bad multipart
 * is a 400 and leaves no file behind.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import busboy from 'busboy';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import qs from 'qs';
import { coerceError } from '../domain/errors.js';
import { webError } from './web-errors.js';

/** Nested keys go this deep (`mesg[a][b][c]`); deeper text stays a literal key. */
const QS_OPTIONS = { depth: 8, arrayLimit: 1000, parameterLimit: 10_000 } as const;
/** Form fields of one multipart body, together. File parts have no limit (they go to disk). */
export const MULTIPART_FIELDS_LIMIT = 64 * 1024 * 1024;

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

/** One parameter as a string, or undefined when absent or not a string. */
export function param(req: Request, name: string): string | undefined {
  const v = params(req)[name];
  return typeof v === 'string' ? v : undefined;
}

export function uploads(res: Response): Record<string, Upload> {
  return (res.locals['uploads'] as Record<string, Upload> | undefined) ?? {};
}

/** Parse a multipart/form-data body into `req.body` (fields) and `uploads(res)` (files). */
export function multipart(tmpdir: () => string): RequestHandler {
  return (req: Request, res: Response, next: NextFunction) => {
    if (!req.is('multipart/form-data')) {
      next();
      return;
    }
    const temps: string[] = [];
    res.on('close', () => {
      for (const f of temps) fs.rm(f, { force: true }, () => undefined);
    });
    let bb: busboy.Busboy;
    try {
      bb = busboy({ headers: req.headers, preservePath: true, limits: { fieldSize: MULTIPART_FIELDS_LIMIT, fields: 10_000, files: 100 } });
    } catch (e) {
      next(webError('RQ_BAD_REQUEST', `Bad multipart body: ${coerceError(e).message}`));
      return;
    }
    const fields: [string, string][] = [];
    const files: Record<string, Upload> = {};
    const writes: Promise<void>[] = [];
    let fieldBytes = 0;
    let failed = false;
    const fail = (e: Error): void => {
      if (failed) return;
      failed = true;
      req.unpipe(bb);
      req.resume();
      next(e);
    };
    bb.on('field', (name, value, info) => {
      fieldBytes += name.length + value.length;
      if (info.valueTruncated || fieldBytes > MULTIPART_FIELDS_LIMIT) {
        fail(webError('RQ_TOO_LARGE', `Multipart form fields are over ${MULTIPART_FIELDS_LIMIT} bytes`));
        return;
      }
      fields.push([name, value]);
    });
    bb.on('file', (name, stream, info) => {
      const tmp = path.join(tmpdir(), `RackMultipart-${crypto.randomUUID()}`);
      temps.push(tmp);
      const out = fs.createWriteStream(tmp, { flags: 'wx', mode: 0o600 });
      writes.push(
        pipeline(stream, out).then(() => {
          files[name] = { path: tmp, filename: info.filename ?? '', size: out.bytesWritten };
        }),
      );
    });
    bb.on('error', (e) => fail(webError('RQ_BAD_REQUEST', `Bad multipart body: ${coerceError(e).message}`)));
    bb.on('partsLimit', () => fail(webError('RQ_TOO_LARGE', 'Too many multipart parts')));
    bb.on('filesLimit', () => fail(webError('RQ_TOO_LARGE', 'Too many multipart files')));
    bb.on('fieldsLimit', () => fail(webError('RQ_TOO_LARGE', 'Too many multipart fields')));
    bb.on('close', () => {
      Promise.all(writes).then(
        () => {
          if (failed) return;
          req.body = parseQuery(new URLSearchParams(fields).toString());
          res.locals['uploads'] = files;
          next();
        },
        (e: unknown) => fail(webError('RQ_IO', `Could not store the upload: ${coerceError(e).message}`)),
      );
    });
    req.pipe(bb);
  };
}
