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
 * Per message, however many viewers: one timer asks the queue for the message's state
 * about once a second (`get_message_state`). The same tick is the slow-poll fallback
 * behind fs.watch and the clock of the heartbeats. Once the message is out of
 * prep/que/run, the tail reads to the end, flushes the unfinished line, sends
 * `event: end` with the final state and closes. A client that goes away stops its
 * watcher and closes its fd at once.
 *
 * The stream, in order: `event: state` (data: the state; again on every change),
 * `event: skipped` (data: bytes left out at the start of a first connection, which sends
 * at most the last 256 KiB), chunk events (`id: <offset>`, data: the chunk's HTML as a
 * JSON string, because a log line may hold a CR that would break SSE framing), comment
 * heartbeats, and `event: end` (data: the final state, or `deleted`).
 */
import type fs from 'node:fs';
import { watch } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import Convert from 'ansi-to-html';
import type { Response } from 'express';
import { coerceError } from '../domain/errors.js';
import type { Logger } from '../lib/logger.js';
import type { Gateway } from './gateway.js';

/** States in which a message's files may still grow. */
const ACTIVE_STATES: ReadonlySet<string> = new Set(['prep', 'que', 'run']);
/** A first connection (no offset given) gets at most this much of the end of the file. */
export const FIRST_WINDOW_BYTES = 256 * 1024;
const READ_BYTES = 64 * 1024;
/** A line longer than this goes out in pieces instead of waiting for its newline. */
const MAX_LINE_BYTES = 64 * 1024;
/** How often the state is asked and the file polled, in ms. */
const POLL_MS = 1000;
/** A comment goes out when nothing else did for this long, in ms. */
const HEARTBEAT_MS = 15_000;
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

/** One viewer of a message, driven by the shared per-message poll. */
interface Viewer {
  /** About once a second: poll the file, send a heartbeat when due. */
  tick(): void;
  /** The state the queue gave, `deleted` when it no longer knows the message. */
  state(state: string): void;
}

/** One `get_message_state` poll per message, shared by all its viewers. */
export interface StateWatch {
  /** Start delivering ticks and states to `viewer`; the returned function stops it. */
  watch(queue: string, id: string, viewer: Viewer): () => void;
}

export function createStateWatch(gw: Gateway): StateWatch {
  const polls = new Map<string, { viewers: Set<Viewer>; timer: NodeJS.Timeout; asking: boolean }>();
  const ask = async (queue: string, id: string): Promise<string | undefined> => {
    const reply = await gw.queue(queue, 'get_message_state', { msg_id: id }, 5000);
    if (!Array.isArray(reply)) return undefined; // the queue did not answer: ask again next tick
    if (reply[0] === 'ok' && typeof reply[1] === 'string') return reply[1];
    return reply[1] === 'msg not found' ? 'deleted' : undefined; // e.g. `status: DOWN`: wait
  };
  return {
    watch(queue, id, viewer) {
      const key = `${queue}/${id}`;
      let poll = polls.get(key);
      if (!poll) {
        const p = { viewers: new Set<Viewer>(), asking: false, timer: setInterval(() => {
          for (const v of p.viewers) v.tick();
          if (p.asking) return;
          p.asking = true;
          void ask(queue, id).then((state) => {
            p.asking = false;
            if (state !== undefined) for (const v of p.viewers) v.state(state);
          });
        }, POLL_MS) };
        poll = p;
        polls.set(key, p);
      }
      const current = poll;
      current.viewers.add(viewer);
      return () => {
        current.viewers.delete(viewer);
        if (current.viewers.size === 0) {
          clearInterval(current.timer);
          polls.delete(key);
        }
      };
    },
  };
}

export interface LiveTailOptions {
  queue: string;
  id: string;
  /** The state the message had when the request came in. */
  state: string;
  /** The byte offset to start from (Last-Event-ID or `?from=`); undefined on a first connection. */
  from: number | undefined;
  /** Open the file where the message is now; undefined while it does not exist. */
  open: () => Promise<OpenedFile | undefined>;
  states: StateWatch;
  log: Logger;
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

/** Answer `res` with the live tail; it ends by itself or when the client goes away. */
export function startLiveTail(res: Response, opts: LiveTailOptions): void {
  res.status(200);
  res.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
  res.setHeader('Cache-Control', 'no-cache');
  res.setHeader('X-Accel-Buffering', 'no');
  res.flushHeaders();
  const tail = new LiveTail(res, opts);
  tail.begin();
}

class LiveTail implements Viewer {
  private readonly res: Response;
  private readonly opts: LiveTailOptions;
  private readonly ansi = new Convert(ANSI_OPTIONS);
  private file: OpenedFile | undefined;
  private watcher: fs.FSWatcher | undefined;
  private unwatch: (() => void) | undefined;
  /** The next byte to read. */
  private offset = 0;
  /** Bytes read but not sent yet (the unfinished line). */
  private pending = Buffer.alloc(0);
  private lastState: string;
  private lastWriteAt = Date.now();
  /** Reads and the end run one after another on this chain. */
  private work: Promise<void> = Promise.resolve();
  private readQueued = false;
  private ending = false;
  private closed = false;

  constructor(res: Response, opts: LiveTailOptions) {
    this.res = res;
    this.opts = opts;
    this.lastState = opts.state;
  }

  begin(): void {
    if (this.res.destroyed) return; // the client left while the message was looked up
    this.res.on('close', () => this.stop());
    this.send(`event: state\ndata: ${this.lastState}\n\n`);
    this.unwatch = this.opts.states.watch(this.opts.queue, this.opts.id, this);
    if (ACTIVE_STATES.has(this.lastState)) this.pump();
    else this.finish(this.lastState);
  }

  tick(): void {
    this.pump();
    if (!this.closed && Date.now() - this.lastWriteAt >= HEARTBEAT_MS) this.send(': heartbeat\n\n');
  }

  state(state: string): void {
    if (this.closed || this.ending || state === this.lastState) return;
    this.lastState = state;
    this.send(`event: state\ndata: ${state}\n\n`);
    if (!ACTIVE_STATES.has(state)) this.finish(state);
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

  private enqueue(job: () => Promise<void>): void {
    this.work = this.work.then(job).catch((err: unknown) => {
      if (this.closed) return; // a read racing the close of its fd
      this.opts.log.error({ err: coerceError(err).message, queue: this.opts.queue, msg_id: this.opts.id }, 'live tail failed');
      this.res.end();
      this.stop();
    });
  }

  /** Open the file once it exists, at the offset asked for or at the start of the window. */
  private async ensureOpen(): Promise<OpenedFile | undefined> {
    if (this.file) return this.file;
    const file = await this.opts.open();
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
      this.opts.log.warn({ err: coerceError(e).message, file: file.path }, 'live tail without fs.watch');
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
    this.unwatch?.();
    this.watcher?.close();
    const file = this.file;
    this.file = undefined;
    // FileHandle.close waits for a read in flight, so the fd is never pulled from under it.
    file?.fh.close().catch((err: unknown) => this.opts.log.error({ err: coerceError(err).message }, 'live tail: cannot close the file'));
  }
}
