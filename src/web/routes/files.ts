/**
 * Files of a message, read straight from the disk: logs from
 * `job/` and attachments from `attach/` as raw bytes with byte ranges, RQ's tail viewer
 * pages, and the live tail over Server-Sent Events (tail-stream.ts).
 *
 * A file name is checked before it touches a path (no separators, no dot-files), the
 * message directory comes from the queue's own answer, and the file must be a regular
 * file directly in its directory: a symlink may point within that directory and nowhere
 * else, and a FIFO or a directory is not found; the path of the opened fd is checked
 * again, so a link swapped in after the check leads nowhere. Downloads stream from the
 * open fd, closed whatever happens; a 1.5 MB attachment is never held in memory. Live
 * tails are capped (tail-stream.ts): beyond the caps the events routes answer 503.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Router, type Request, type Response } from 'express';
import type { WebContext } from '../context.js';
import type { Gateway } from '../gateway.js';
import { checkFileName, findMessage, locateMessage } from '../lookups.js';
import { sendBare } from '../render.js';
import { createTailHub, tailLimits, type OpenedFile } from '../tail-stream.js';
import { webError } from '../web-errors.js';

/** Where a route's files live in a message directory, and how a missing one is named. */
interface Area {
  dir: 'job' | 'attach';
  /** The 404 text's subject: `Message ID log '<name>' not found`. */
  what: string;
}

const LOGS: Area = { dir: 'job', what: 'Message ID log' };
const ATTACHMENTS: Area = { dir: 'attach', what: 'Message ID attachment' };

/** RQ's types by extension; anything else is a download. */
const TYPES: Record<string, string> = {
  '.json': 'application/json',
  '.log': 'text/plain; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
  '.jpg': 'image/jpeg',
  '.png': 'image/png',
};

function contentType(name: string): string {
  return TYPES[path.extname(name).toLowerCase()] ?? 'application/octet-stream';
}

/** No FIFO can block the open; no symlink is followed at the last step. */
const OPEN_FLAGS = fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK;

function isMissing(e: unknown): boolean {
  const code = (e as NodeJS.ErrnoException).code;
  return code === 'ENOENT' || code === 'ENOTDIR' || code === 'ELOOP';
}

/**
 * The regular file `name` of `area` in the message directory `msgDir`, opened, or
 * undefined when there is none. A symlink is resolved and must land directly in the
 * same directory; the resolved path is opened without following links, and the path of
 * the open fd is checked again: a worker that swaps `job/` (or the file) for a symlink
 * between the check and the open gets a 404, not a file from elsewhere.
 */
async function openIn(msgDir: string, area: Area, name: string): Promise<OpenedFile | undefined> {
  let real: string;
  let realDir: string;
  try {
    const realMsgDir = await fsp.realpath(msgDir);
    realDir = path.join(realMsgDir, area.dir);
    real = await fsp.realpath(path.join(realDir, name));
  } catch (e) {
    if (isMissing(e)) return undefined;
    throw e;
  }
  if (path.dirname(real) !== realDir) return undefined;
  let fh: fsp.FileHandle;
  try {
    fh = await fsp.open(real, OPEN_FLAGS);
  } catch (e) {
    if (isMissing(e)) return undefined;
    throw e;
  }
  let opened: OpenedFile | undefined;
  try {
    // The kernel's name for what was opened (Linux); ` (deleted)` may follow a removed file's name.
    const where = await fsp.readlink(`/proc/self/fd/${fh.fd}`);
    if (path.dirname(where) !== realDir) return undefined;
    const st = await fh.stat();
    if (!st.isFile()) return undefined;
    opened = { fh, path: real, size: st.size, mtimeMs: st.mtimeMs };
    return opened;
  } finally {
    if (!opened) await fh.close();
  }
}

/** The file of a message for a download: 404 for a missing message or file. */
async function findFile(gw: Gateway, req: Request, area: Area, param: string): Promise<OpenedFile> {
  const name = checkFileName(String(req.params[param]), area.what);
  const loc = await locateMessage(gw, String(req.params['name']), String(req.params['msg_id']));
  let file = await openIn(loc.dir, area, name);
  if (!file) {
    // The message may have moved to its next state between the lookup and the open.
    const now = await findMessage(gw, loc.queue, loc.id);
    if (typeof now === 'object' && now.dir !== loc.dir) file = await openIn(now.dir, area, name);
  }
  if (!file) throw webError('RQ_NOT_FOUND', `${area.what} '${name}' not found`);
  return file;
}

/**
 * Raw bytes with `Last-Modified`, `If-Modified-Since` → 304, and RQ's (Rack's) byte
 * ranges: one range → 206, unsatisfiable → 416, several (or a malformed header) → 200
 * with the whole file. The caller closes the file.
 */
async function sendFile(req: Request, res: Response, file: OpenedFile, name: string): Promise<void> {
  const { fh, size } = file;
  const mtime = Math.floor(file.mtimeMs / 1000) * 1000;
  res.setHeader('Last-Modified', new Date(mtime).toUTCString());
  res.setHeader('Accept-Ranges', 'bytes');
  const since = Date.parse(req.headers['if-modified-since'] ?? '');
  if (since >= mtime) {
    res.status(304).end();
    return;
  }
  const ranges = /^bytes=/i.test(req.headers.range ?? '') ? req.range(size) : undefined;
  if (ranges === -1) {
    res.status(416).setHeader('Content-Range', `bytes */${size}`);
    res.type('text/plain; charset=utf-8').send('Byte range unsatisfiable\n');
    return;
  }
  let start = 0;
  let end = size - 1;
  const one = Array.isArray(ranges) && ranges.length === 1 ? ranges[0] : undefined;
  if (one) {
    ({ start, end } = one);
    res.status(206).setHeader('Content-Range', `bytes ${start}-${end}/${size}`);
  }
  res.setHeader('Content-Type', contentType(name));
  res.setHeader('Content-Length', String(end - start + 1));
  if (size === 0) {
    res.end();
    return;
  }
  await pipeline(fh.createReadStream({ start, end, autoClose: false }), res);
}

/** The offset a live tail starts at: `Last-Event-ID` (a reconnect), else `?from=`, else none. */
function startOffset(req: Request): number | undefined {
  const header = req.headers['last-event-id'];
  const query = req.query['from'];
  const raw = typeof header === 'string' && header !== '' ? header : query;
  if (raw === undefined) return undefined;
  const n = typeof raw === 'string' && /^\d{1,15}$/.test(raw) ? Number(raw) : NaN;
  // The value is not echoed: error bodies are sent as HTML.
  if (!Number.isSafeInteger(n)) throw webError('RQ_BAD_REQUEST', 'Expected the start offset (Last-Event-ID or from) to be a byte count: digits only, at most 15');
  return n;
}

export function fileRoutes(ctx: WebContext): Router {
  const { gw, log } = ctx;
  const tails = createTailHub(gw, log, tailLimits(process.env, log));
  const r = Router();

  const download = (area: Area, param: string) => async (req: Request, res: Response) => {
    const file = await findFile(gw, req, area, param);
    try {
      await sendFile(req, res, file, String(req.params[param]));
    } finally {
      await file.fh.close();
    }
  };
  r.get('/q/:name/:msg_id/log/:log_name', download(LOGS, 'log_name'));
  r.get('/q/:name/:msg_id/attach/:attach_name', download(ATTACHMENTS, 'attach_name'));

  const events = (area: Area, param: string) => async (req: Request, res: Response) => {
    const name = checkFileName(String(req.params[param]), area.what);
    const queue = String(req.params['name']);
    const from = startOffset(req);
    const loc = await locateMessage(gw, queue, String(req.params['msg_id']));
    tails.start(res, { queue: loc.queue, id: loc.id, state: loc.state, status: loc.status, dir: loc.dir, from, open: (dir) => openIn(dir, area, name) });
  };
  r.get('/q/:name/:msg_id/events/:log_name', events(LOGS, 'log_name'));
  r.get('/q/:name/:msg_id/events/attach/:attach_name', events(ATTACHMENTS, 'attach_name'));

  /** RQ's tail viewer, standalone, fed by the live tail. */
  const tailview = (area: Area, param: string) => async (req: Request, res: Response) => {
    const name = checkFileName(String(req.params[param]), area.what);
    const queue = String(req.params['name']);
    const loc = await locateMessage(gw, queue, String(req.params['msg_id']));
    if (area === ATTACHMENTS) {
      // An attachment must exist (a log may still be to come).
      const file = await openIn(loc.dir, area, name);
      if (!file) throw webError('RQ_NOT_FOUND', `${area.what} '${name}' not found`);
      await file.fh.close();
    }
    await sendBare(res, 'tailview', { queue, id: loc.id, fileName: name, isAttachment: area === ATTACHMENTS, state: loc.state });
  };
  r.get('/q/:name/:msg_id/tailviewlog/:log_name', tailview(LOGS, 'log_name'));
  r.get('/q/:name/:msg_id/tailview/:attach_name', tailview(ATTACHMENTS, 'attach_name'));

  return r;
}
