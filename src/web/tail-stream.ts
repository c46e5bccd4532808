/**
 * The live tail: a file of a message sent as Server-Sent Events while the script writes
 * it (issue 3, "live log tail"; beyond RQ, whose tail viewer polled with byte ranges).
 *
 * Each connection holds an open fd read from a byte offset, an fs.watch on the file and
 * its own ANSI-to-HTML converter (ansi-to-html, escaping on, colour state carried from
 * chunk to chunk). Only complete lines go out: an unfinished last line waits for its
 * newline, or for the end of the run. Every chunk's event id is the byte offset after it,
 * so a reconnecting EventSource (Last-Event-ID) resumes exactly where it stopped.
 *
 * Per message, however many viewers: one timer asks the queue where the message is about
 * once a second (`get_message_status`: its state and directory), also while it waits in
 * prep or que and its log is not there yet, so a viewer costs no RPC of its own. The same
 * tick is the slow-poll fallback behind fs.watch and the clock of the heartbeats. Once
 * the message is out of prep/que/run, the tail reads to the end, flushes the unfinished
 * line, sends `event: end` with the final state and closes. A client that goes away
 * stops its watcher and closes its fd at once.
 *
 * Limits: at most 256 live tails at once (RQ_WEB_MAX_TAILS, read at web start, lowers
 * it) and 32 per message; beyond them the reply is a 503 that says so. A
 * stream of a message that waits in prep or que with nothing new for 10 minutes is
 * closed without `event: end` (after `retry: 30000`): the EventSource reconnects.
 *
 * The stream, in order: `event: state` (data: the state; again on every change),
 * `event: status` (data: the status text `<state> - <text>` as a JSON string; again on
 * every change, before the state that came with it),
 * `event: skipped` (data: bytes left out at the start of a first connection, which sends
 * at most the last 256 KiB), chunk events (`id: <offset>`, data: the chunk's HTML as a
 * JSON string, because a log line may hold a CR that would break SSE framing), comment
 * heartbeats, and `event: end` (data: the final state, or `deleted`).
 */
import type fs from 'node:fs';
import { watch } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { createRequire } from 'node:module';
import type Convert from 'ansi-to-html';
import type { Response } from 'express';
import { coerceError } from '../domain/errors.js';
import type { Logger } from '../lib/logger.js';
import type { Gateway } from './gateway.js';
import { findMessage } from './lookups.js';

/** States in which a message's files may still grow. */
const ACTIVE_STATES: ReadonlySet<string> = new Set(['prep', 'que', 'run']);
/** A first connection (no offset given) gets at most this much of the end of the file. */
const FIRST_WINDOW_BYTES = 256 * 1024;
const READ_BYTES = 64 * 1024;
/** A line longer than this goes out in pieces instead of waiting for its newline. */
const MAX_LINE_BYTES = 64 * 1024;
/** How often the state is asked and the file polled, in ms. */
const POLL_MS = 1000;
/** A comment goes out when nothing else did for this long, in ms. */
const HEARTBEAT_MS = 15_000;
/** Live tails open at once, all together; RQ_WEB_MAX_TAILS (read once, at web start) lowers it. */
const MAX_TAILS = 256;
/** Live tails of one message open at once (never more than the total). */
const MAX_TAILS_PER_MESSAGE = 32;
/** States in which a message waits to start (its log is not there yet). */
const WAITING_STATES: ReadonlySet<string> = new Set(['prep', 'que']);
/** A stream of a waiting message that sent nothing for this long is closed, in ms; the client reconnects. */
const IDLE_MS = 10 * 60_000;
/** The delay a client is asked to wait before it tries again, in ms: `retry:` of an idle stream, `Retry-After` of a 503. */
const RETRY_MS = 30_000;

/**
 * fg and bg are the colours of `pre#tail-output` in rq.css (ansi-to-html uses them for the
 * "default colour" codes); the 16 base colours are lightened to read on that dark ground.
 */
const ANSI_OPTIONS = {
  escapeXML: true,
  stream: true,
  fg: '#d8dee9',
  bg: '#15191e',
  colors: [
    '#6e7681', '#ff6b6b', '#5fd068', '#e5c07b', '#61afef', '#c678dd', '#56b6c2', '#d8dee9',
    '#8b949e', '#ff8787', '#8ce99a', '#ffe066', '#74c0fc', '#e599f7', '#66d9e8', '#ffffff',
  ],
};

/** The tailed file, opened, and the path it was opened at (for fs.watch). */
export interface OpenedFile {
  fh: FileHandle;
  path: string;
  size: number;
  mtimeMs: number;
}

/** Live tails open at once: all together and per message. */
export interface TailLimits {
  total: number;
  perMessage: number;
}

/** The caps: 256 at once, or RQ_WEB_MAX_TAILS (a positive integer) when it is lower; per message at most 32. */
export function tailLimits(env: NodeJS.ProcessEnv, log: Logger): TailLimits {
  const raw = env['RQ_WEB_MAX_TAILS'];
  let total = MAX_TAILS;
  if (raw !== undefined && raw !== '') {
    if (!/^[1-9]\d*$/.test(raw)) log.warn({ RQ_WEB_MAX_TAILS: raw }, `RQ_WEB_MAX_TAILS must be a positive integer: using ${MAX_TAILS}`);
    else if (Number(raw) > MAX_TAILS) log.warn({ RQ_WEB_MAX_TAILS: raw }, `RQ_WEB_MAX_TAILS can only lower the cap: using ${MAX_TAILS}`);
    else total = Number(raw);
  }
  return { total, perMessage: Math.min(MAX_TAILS_PER_MESSAGE, total) };
}

export interface LiveTailOptions {
  /** The queue that serves the message (the routed one). */
  queue: string;
  id: string;
  /** The state the message had when the request came in. */
  state: string;
  /** Its status text then. */
  status: string;
  /** Its directory then. */
  dir: string;
  /** The byte offset to start from (Last-Event-ID or `?from=`); undefined on a first connection. */
  from: number | undefined;
  /** Open the file in the message directory `dir`; undefined while it does not exist. */
  open: (dir: string) => Promise<OpenedFile | undefined>;
}

/** Every live tail of the web process: the caps, and one poll per message for all its viewers. */
export interface TailHub {
  /** Answer `res` with the live tail (it ends by itself or when the client goes away), or a 503 beyond the caps. */
  start(res: Response, opts: LiveTailOptions): void;
}

/** The viewers of one message and the timer that polls it for them. */
interface Poll {
  viewers: Set<LiveTail>;
  timer: NodeJS.Timeout;
  asking: boolean;
}

export function createTailHub(gw: Gateway, log: Logger, limits: TailLimits): TailHub {
  const polls = new Map<string, Poll>();
  let open = 0;

  /** About once a second: every viewer reads what is new; one `get_message_status` for all. */
  const tick = (poll: Poll, queue: string, id: string): void => {
    for (const v of poll.viewers) v.tick();
    if (poll.asking) return;
    poll.asking = true;
    findMessage(gw, queue, id, 5000)
      .then((loc) => {
        // No answer (or e.g. `status: DOWN`): ask again next tick.
        if (loc === undefined) return;
        for (const v of poll.viewers) {
          if (loc === 'missing') v.update('deleted', undefined, undefined);
          else v.update(loc.state, loc.status, loc.dir);
        }
      })
      .catch((err: unknown) => log.error({ err: coerceError(err).message, queue, msg_id: id }, 'live tail: cannot ask the message state'))
      .finally(() => {
        poll.asking = false;
      });
  };

  const refusal = (key: string): string | undefined => {
    if (open >= limits.total) return `Too many live tails open (at most ${limits.total} at once): try again later`;
    if ((polls.get(key)?.viewers.size ?? 0) >= limits.perMessage) {
      return `Too many live tails of message ${key} open (at most ${limits.perMessage} at once): try again later`;
    }
    return undefined;
  };

  return {
    start(res, opts) {
      if (res.destroyed) return; // the client left while the message was looked up
      const key = `${opts.queue}/${opts.id}`;
      const why = refusal(key);
      if (why !== undefined) {
        res.status(503).setHeader('Retry-After', String(RETRY_MS / 1000));
        res.type('text/plain; charset=utf-8').send(`503 - ${why}\n`);
        return;
      }
      let poll = polls.get(key);
      if (!poll) {
        const p: Poll = { viewers: new Set(), asking: false, timer: setInterval(() => tick(p, opts.queue, opts.id), POLL_MS) };
        polls.set(key, p);
        poll = p;
      }
      const mine = poll;
      open++;
      const tail = new LiveTail(res, opts, log, () => {
        open--;
        mine.viewers.delete(tail);
        if (mine.viewers.size === 0) {
          clearInterval(mine.timer);
          polls.delete(key);
        }
      });
      mine.viewers.add(tail);
      tail.begin();
    },
  };
}

/** Where a first connection starts: the start of the first whole line of the last 256 KiB. */
async function windowStart(fh: FileHandle, size: number): Promise<number> {
  if (size <= FIRST_WINDOW_BYTES) return 0;
  const start = size - FIRST_WINDOW_BYTES;
  const buf = Buffer.alloc(READ_BYTES);
  const { bytesRead } = await fh.read(buf, 0, READ_BYTES, start);
  const nl = buf.subarray(0, bytesRead).indexOf(0x0a);
  return nl < 0 ? start : start + nl + 1;
}

/** The largest cut ≤ `at` that does not split a UTF-8 character. */
function utf8Cut(buf: Buffer, at: number): number {
  let cut = at;
  while (cut > 0 && cut < buf.length && ((buf[cut] ?? 0) & 0xc0) === 0x80) cut--;
  return cut;
}

/** ansi-to-html, loaded at the first live tail (it costs megabytes a web process at rest does without). */
let converter: typeof Convert | undefined;
function ansiToHtml(): typeof Convert {
  converter ??= createRequire(import.meta.url)('ansi-to-html') as typeof Convert;
  return converter;
}

/** One viewer: an open fd read from an offset, an fs.watch, its ANSI state; driven by its message's poll. */
class LiveTail {
  private readonly res: Response;
  private readonly opts: LiveTailOptions;
  private readonly log: Logger;
  /** Gives the viewer's place back to the hub (once, from stop). */
  private readonly release: () => void;
  private readonly ansi = new (ansiToHtml())(ANSI_OPTIONS);
  private file: OpenedFile | undefined;
  private watcher: fs.FSWatcher | undefined;
  /** The next byte to read. */
  private offset = 0;
  /** Bytes read but not sent yet (the unfinished line). */
  private pending = Buffer.alloc(0);
  private lastState: string;
  private lastStatus: string;
  /** The message directory as last heard from the queue. */
  private dir: string;
  private lastWriteAt = Date.now();
  /** When a chunk or a new state last went out (heartbeats do not count). */
  private lastNewsAt = Date.now();
  /** Reads and the end run one after another on this chain. */
  private work: Promise<void> = Promise.resolve();
  private readQueued = false;
  private ending = false;
  private closed = false;

  constructor(res: Response, opts: LiveTailOptions, log: Logger, release: () => void) {
    this.res = res;
    this.opts = opts;
    this.log = log;
    this.release = release;
    this.lastState = opts.state;
    this.lastStatus = opts.status;
    this.dir = opts.dir;
  }

  begin(): void {
    const { res } = this;
    res.status(200);
    res.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
    res.setHeader('Cache-Control', 'no-cache');
    res.setHeader('X-Accel-Buffering', 'no');
    res.flushHeaders();
    res.on('close', () => this.stop());
    this.send(`event: state\ndata: ${this.lastState}\n\n`);
    this.sendStatus();
    if (ACTIVE_STATES.has(this.lastState)) this.pump();
    else this.finish(this.lastState);
  }

  /** About once a second: poll the file, send a heartbeat when due, close when idle too long. */
  tick(): void {
    this.pump();
    const now = Date.now();
    if (!this.ending && WAITING_STATES.has(this.lastState) && now - this.lastNewsAt >= IDLE_MS) this.idleOut();
    else if (!this.closed && now - this.lastWriteAt >= HEARTBEAT_MS) this.send(': heartbeat\n\n');
  }

  /** What the queue says now: the state (`deleted` when it no longer knows the message), the status text and the directory. */
  update(state: string, status: string | undefined, dir: string | undefined): void {
    if (this.closed || this.ending) return;
    if (dir !== undefined) this.dir = dir;
    if (status !== undefined && status !== this.lastStatus) {
      this.lastStatus = status;
      this.lastNewsAt = Date.now();
      this.sendStatus();
    }
    if (state === this.lastState) return;
    this.lastState = state;
    this.lastNewsAt = Date.now();
    this.send(`event: state\ndata: ${state}\n\n`);
    if (ACTIVE_STATES.has(state)) this.pump();
    else this.finish(state);
  }

  private sendStatus(): void {
    this.send(`event: status\ndata: ${JSON.stringify(this.lastStatus)}\n\n`);
  }

  /** Read what the file has now (coalesced: one read queued at a time). */
  private pump(): void {
    if (this.readQueued || this.ending || this.closed) return;
    this.readQueued = true;
    this.enqueue(async () => {
      this.readQueued = false;
      await this.readAvailable();
    });
  }

  /** The message left run: read to the end, flush the unfinished line, say so, close. */
  private finish(state: string): void {
    if (this.ending) return;
    this.ending = true;
    this.enqueue(async () => {
      await this.readAvailable();
      await this.sendChunk(true);
      if (this.closed) return;
      this.send(`event: end\ndata: ${state}\n\n`);
      this.res.end();
      this.stop();
    });
  }

  /**
   * The message waited too long without news: close without `end`, so the EventSource
   * reconnects (after `retry`) and resumes at its Last-Event-ID, and a tab left open
   * does not hold its place and its poll for ever.
   */
  private idleOut(): void {
    this.ending = true;
    this.enqueue(async () => {
      if (this.closed) return;
      this.send(`retry: ${RETRY_MS}\n\n`);
      this.res.end();
      this.stop();
    });
  }

  private enqueue(job: () => Promise<void>): void {
    this.work = this.work.then(job).catch((err: unknown) => {
      if (this.closed) return; // a read racing the close of its fd
      this.log.error({ err: coerceError(err).message, queue: this.opts.queue, msg_id: this.opts.id }, 'live tail failed');
      this.res.end();
      this.stop();
    });
  }

  /** Open the file once it exists, at the offset asked for or at the start of the window. */
  private async ensureOpen(): Promise<OpenedFile | undefined> {
    if (this.file) return this.file;
    const file = await this.opts.open(this.dir);
    if (!file) return undefined;
    if (this.closed) {
      await file.fh.close();
      return undefined;
    }
    this.file = file;
    const { from } = this.opts;
    if (from !== undefined) {
      this.offset = Math.min(from, file.size);
    } else {
      this.offset = await windowStart(file.fh, file.size);
      if (this.offset > 0) this.send(`event: skipped\ndata: ${this.offset}\n\n`);
    }
    try {
      this.watcher = watch(file.path, { persistent: false }, () => this.pump());
      this.watcher.on('error', () => this.watcher?.close());
    } catch (e) {
      // No inotify watch to be had (e.g. the limit is reached): the 1 s poll still reads.
      this.log.warn({ err: coerceError(e).message, file: file.path }, 'live tail without fs.watch');
    }
    return file;
  }

  private async readAvailable(): Promise<void> {
    const file = await this.ensureOpen();
    if (!file) return;
    const buf = Buffer.allocUnsafe(READ_BYTES);
    while (!this.closed) {
      const { bytesRead } = await file.fh.read(buf, 0, READ_BYTES, this.offset);
      if (bytesRead === 0) return;
      this.offset += bytesRead;
      this.pending = Buffer.concat([this.pending, buf.subarray(0, bytesRead)]);
      await this.sendChunk(false);
    }
  }

  /** Send the complete lines read so far (everything when `all`), as one event. */
  private async sendChunk(all: boolean): Promise<void> {
    const buf = this.pending;
    let cut = all ? buf.length : buf.lastIndexOf(0x0a) + 1;
    if (cut === 0 && buf.length >= MAX_LINE_BYTES) cut = utf8Cut(buf, MAX_LINE_BYTES);
    if (cut === 0 || this.closed) return;
    const html = this.ansi.toHtml(buf.subarray(0, cut).toString('utf8'));
    this.pending = Buffer.from(buf.subarray(cut));
    const id = this.offset - this.pending.length;
    this.lastNewsAt = Date.now();
    if (!this.send(`id: ${id}\ndata: ${JSON.stringify(html)}\n\n`)) await this.drained();
  }

  /** Write one whole event (never split, so heartbeats cannot land inside one); false when the buffer is full. */
  private send(text: string): boolean {
    if (this.closed) return true;
    this.lastWriteAt = Date.now();
    return this.res.write(text);
  }

  private drained(): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        this.res.off('drain', done);
        this.res.off('close', done);
        resolve();
      };
      this.res.on('drain', done);
      this.res.on('close', done);
    });
  }

  private stop(): void {
    if (this.closed) return;
    this.closed = true;
    this.release();
    this.watcher?.close();
    const file = this.file;
    this.file = undefined;
    // FileHandle.close waits for a read in flight, so the fd is never pulled from under it.
    file?.fh.close().catch((err: unknown) => this.log.error({ err: coerceError(err).message }, 'live tail: cannot close the file'));
  }
}
