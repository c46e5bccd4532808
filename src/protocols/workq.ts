/**
 * The Workq front door (spec/workq.md): a TCP server in the web process. Each connection
 * feeds its bytes to the codec (workq-wire.ts) and runs the requests that come out one at
 * a time, in order, writing exactly one reply each (§1). A blocking command holds up its
 * own connection only.
 *
 * A Workq job is a pull message (queue/pull.ts) in the rq queue of its name: the client's
 * UUID is its external id with server scope (unique across every queue and held until
 * the job is removed, `queues/.ids/`), and its TTL is final (the result lives until it).
 * The order of §7 is the pull order: priority, then rank (add and run jobs: below every
 * instant; scheduled jobs: their time), then the sort key (created, to the microsecond,
 * then the id). Max-attempts 0 ("unlimited") is stored as max_count 255, the hard cap of
 * §6. A `run` job is ephemeral: removed once `run` has answered; its TTL (waits plus TTR
 * plus a margin) removes it should this process die before that.
 *
 * What is this door's own: the names used only by `lease` (`config/workq.names`, one per
 * line), the connection count, the start time, and the evicted count (the sum of the
 * queue processes' counts, from this process's start on).
 *
 * What a connection holds in memory is bounded: the bytes it has sent that are not yet
 * answered (decoded commands waiting their turn, the one being answered, and a command
 * still arriving; the bytes of a chunk count until the last command decoded from it is
 * answered). While it has commands to answer, it is not read once those bytes reach
 * CONNECTION_BYTES, or all connections' reach DOOR_BYTES, or MAX_QUEUED commands wait;
 * it is read again as its commands are answered, so a pipelining client still gets every
 * reply, in order. A connection with nothing to answer is always read, so a command of
 * the largest size (1,058,576 bytes) always comes whole. A connection that is not read
 * does not see its client go away until it is read again. The web's `/metrics` shows all
 * connections' bytes (rq_workq_held_bytes).
 *
 * A queue in a token-protected lmstfy namespace that the section's `queues` patterns do
 * not name is closed to this door (door-access.ts), as a name it may not use: `add`,
 * `schedule`, `run` and `lease` naming one are `Invalid Name` (and such a name is never
 * recorded); a job in one is absent (`-NOT-FOUND`) to the commands by id; `inspect
 * queues` leaves it out and `inspect queue`, `jobs` and `scheduled-jobs` answer
 * `-NOT-FOUND`, as for a queue that does not exist.
 *
 * A command that fails gets its reply from ERROR_REPLIES, the one table from rq's error
 * codes to Workq replies; the text of an error inside rq goes to the log only.
 */
import { EventEmitter } from 'node:events';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import * as v from 'valibot';
import { flag, parseConfigValue } from '../domain/config-check.js';
import { RqError, coerceError, type ErrorCode } from '../domain/errors.js';
import { protocolSection } from '../domain/main-config.js';
import { abortableSleep } from '../lib/abortable-sleep.js';
import { queueDirNames } from '../store/layout.js';
import { doorAccess, parseQueuePatterns } from './door-access.js';
import type { PublishInput, PulledJob, PullStats } from './pull-client.js';
import type { ProtocolContext } from './context.js';
import {
  NOT_FOUND,
  OK,
  TIMEOUT,
  WorkqDecoder,
  clientError,
  inspectReply,
  leaseReply,
  resultReply,
  serverError,
  workqTime,
  type Decoded,
  type InspectRequest,
  type WireOptions,
  type WorkqRequest,
} from './workq-wire.js';

/** Add and run jobs sort before every scheduled job of their priority (§7). */
const UNSCHEDULED_RANK = Number.MIN_SAFE_INTEGER;
/** Expiry instants past year 9999 are "never" (§4). */
const LAST_INSTANT = Date.UTC(9999, 11, 31, 23, 59, 59, 999);
/** Max-attempts 0: the hard cap of §6. */
const ATTEMPT_CAP = 255;
/** How long a `run` job outlives its waits, should its waiter die. */
const RUN_MARGIN_MS = 60_000;
/** Decoded commands a connection may have waiting before it stops reading. */
const MAX_QUEUED = 1_000;
/** Bytes a connection may hold (sent, not yet answered) before it stops reading while it has commands to answer. */
const CONNECTION_BYTES = 2 * 1024 * 1024;
/** The same, all connections together: past it, every connection with commands to answer stops reading. */
const DOOR_BYTES = 64 * 1024 * 1024;
/** The TTR of a lease of a message that has none (one another front door made). */
const DEFAULT_TTR_MS = 60_000;
/** A name this door may not use (door-access.ts): §3's word for a name it cannot take. */
const CLOSED_NAME = clientError('Invalid Name');
/** A failure inside rq (a bug, a file it cannot write): its text is for the log, not the client. */
const INTERNAL_ERROR = serverError('internal error');
/** In ERROR_REPLIES: `-SERVER-ERROR` with the error's own text. */
const OWN_TEXT = 'own text';

/**
 * The one mapping from rq's errors to Workq replies (§2). An error whose text rq writes
 * for a client, saying what to do next (a full disk, a queue process that is restarting
 * or DOWN), is `-SERVER-ERROR` with that text; every other error has its fixed reply,
 * whatever its text says.
 */
const ERROR_REPLIES = {
  RQ_NOT_FOUND: NOT_FOUND,
  RQ_DUPLICATE: clientError('Duplicate job'),
  RQ_NOT_IN_STATE: serverError('Queue out of sync'),
  RQ_STALE: serverError('Queue out of sync'),
  RQ_NOT_PULL: serverError('Queue runs a script: its jobs are not for workers'),
  RQ_QUEUE_DOWN: OWN_TEXT,
  RQ_UNAVAILABLE: OWN_TEXT,
  RQ_OUTCOME_UNKNOWN: OWN_TEXT,
  RQ_NO_SPACE: OWN_TEXT,
  RQ_BAD_MESSAGE: INTERNAL_ERROR,
  RQ_BAD_REQUEST: INTERNAL_ERROR,
  RQ_QUEUE_NOT_FOUND: INTERNAL_ERROR,
  RQ_ATTACH: INTERNAL_ERROR,
  RQ_IO: INTERNAL_ERROR,
  RQ_PROTOCOL: INTERNAL_ERROR,
  RQ_CONFIG: INTERNAL_ERROR,
  RQ_FORBIDDEN: INTERNAL_ERROR,
  RQ_UPSTREAM: INTERNAL_ERROR,
  RQ_TOO_LARGE: INTERNAL_ERROR,
  RQ_BUSY: INTERNAL_ERROR,
  RQ_ENCODED_BODY: INTERNAL_ERROR,
} as const satisfies Record<ErrorCode, Buffer | typeof OWN_TEXT>;

/** The section, checked: the codec's options, and the patterns of the protected lmstfy queues this door may touch. */
export interface WorkqConfig extends WireOptions {
  /** @default [] */
  queues: RegExp[];
}

/** The section's own keys (`queues` is door-access.ts's). */
const SECTION = protocolSection(
  { strict: flag(false), strictUuidV4: flag(false), strictTtlCap: flag(false), queues: v.optional(v.unknown()) },
  (keys) => `is not a Workq key (known: ${keys})`,
);

/** Check the section's own keys; a bad one is an RQ_CONFIG error naming it. */
export function parseWorkqSection(raw: Record<string, unknown>): WorkqConfig {
  const { strict, strictUuidV4, strictTtlCap, queues } = parseConfigValue(SECTION, raw, 'protocols.workq');
  return { strictUuidV4: strict || strictUuidV4, strictTtlCap: strict || strictTtlCap, queues: parseQueuePatterns('workq', queues) };
}

/** The bytes all Workq connections of this process hold (see the file comment). */
let heldBytes = 0;

/** What all Workq connections hold now, for the web's `/metrics`. */
export function workqHeldBytes(): number {
  return heldBytes;
}

/** The sort key after rank: created (µs, fixed width), then the id (§7). */
function sortKey(id: string): string {
  const micros = Math.round((performance.timeOrigin + performance.now()) * 1000);
  return `${String(micros).padStart(17, '0')} ${id}`;
}

/** §5.9's job state: 0 NEW, 1 COMPLETED, 2 FAILED, 3 PENDING, 4 LEASED. */
function stateNumber(job: PulledJob): number {
  if (job.state === 'run') return 4;
  if (job.state === 'done') return 1;
  if (job.state === 'err') return 2;
  return job.count > 0 || job.fails > 0 ? 3 : 0;
}

function jobRecord(job: PulledJob): { label: string; pairs: Array<readonly [string, string | number | Buffer]> } {
  const payload = Buffer.from(job.payload ?? '', 'base64');
  const pairs: Array<readonly [string, string | number | Buffer]> = [
    ['name', job.queue],
    ['ttr', job.ttr_ms ?? 0],
    ['ttl', job.ttl ?? '0'],
    ['payload-size', payload.length],
    ['payload', payload],
    ['max-attempts', job.max_attempts ?? 0],
    ['attempts', job.count],
    ['max-fails', job.max_fails],
    ['fails', job.fails],
    ['priority', job.priority],
    ['state', stateNumber(job)],
    ['created', workqTime(job.created_ms)],
  ];
  if (job.scheduled_at !== null) pairs.push(['time', workqTime(job.scheduled_at)]);
  return { label: job.ext_id ?? job.id, pairs };
}

/** The evicted count of §5.9, from this door's start: the queue processes' counts, carried over their restarts. */
class EvictedCount {
  private readonly since: number;
  private readonly seen = new Map<string, { started: number; evicted: number; base: number }>();
  private carried = 0;

  constructor(since: number) {
    this.since = since;
  }

  note(queue: string, s: PullStats): void {
    const prev = this.seen.get(queue);
    if (prev && prev.started === s.started) {
      prev.evicted = s.evicted;
      return;
    }
    if (prev) this.carried += prev.evicted - prev.base;
    // A process older than this door: what it counted before is not ours.
    this.seen.set(queue, { started: s.started, evicted: s.evicted, base: !prev && s.started < this.since ? s.evicted : 0 });
  }

  get total(): number {
    let n = this.carried;
    for (const q of this.seen.values()) n += q.evicted - q.base;
    return n;
  }
}

export function workqServer(ctx: ProtocolContext): net.Server {
  const options = parseWorkqSection(ctx.section.raw);
  const { client, log } = ctx;
  const started = Date.now();
  const namesFile = path.join(ctx.root.configDir, 'workq.names');
  const leaseNames = new Set(readNames(namesFile));
  /** Fired with a queue's name when this door made it (a waiting lease may want it). */
  const made = new EventEmitter();
  made.setMaxListeners(0);
  const evicted = new EvictedCount(started);
  const mayTouch = doorAccess(ctx.namespaces, options.queues);
  let clients = 0;

  /** A queue or lease-only name this door can see. */
  const known = (name: string): boolean => mayTouch(name) && (client.exists(name) || leaseNames.has(name));

  const allNames = (): string[] => [...new Set([...queueDirNames(ctx.root), ...leaseNames])].filter(mayTouch).sort();

  const stats = async (name: string): Promise<PullStats> => {
    const s = await client.stats(name);
    // A name used only by lease has no process (started 0) to count for.
    if (s.started > 0) evicted.note(name, s);
    return s;
  };

  // What the queue processes counted before this door started is not ours.
  void Promise.all(queueDirNames(ctx.root).map((q) => stats(q).catch(() => undefined)));

  const publish = async (name: string, id: string, input: Omit<PublishInput, 'src'>): Promise<void> => {
    const isNew = !client.exists(name);
    await client.publish(name, { src: 'workq', ext_id: id, ext_scope: 'server', ttl_final: true, requeue: 'place', sort_key: sortKey(id), ...input });
    if (isNew) made.emit('queue', name);
  };

  /** A job by its UUID, in a queue this door may touch: its queue and short id. */
  const locate = (id: string): { queue: string; id: string } | undefined => {
    const target = client.findServerId(id);
    return target !== undefined && mayTouch(target.queue) ? target : undefined;
  };

  const find = (id: string): { queue: string; id: string } => {
    const target = locate(id);
    if (target === undefined) throw new RqError('RQ_NOT_FOUND', 'msg not found');
    return target;
  };

  const expiry = (from: number, ttl: bigint): number | undefined => {
    const at = from + Number(ttl);
    return at > LAST_INSTANT ? undefined : at;
  };

  /** §5.4: the first job ready in any of the names, waiting up to `waitMs`; names made meanwhile join the wait. */
  const lease = async (names: string[], waitMs: number, clientGone: AbortSignal): Promise<Buffer> => {
    // A poll takes a job even from a client that has sent its last byte (it may still read the reply).
    const gone = waitMs > 0 ? clientGone : new AbortController().signal;
    const fresh = names.filter((n) => !known(n));
    if (fresh.length > 0) {
      for (const n of fresh) leaseNames.add(n);
      fs.appendFileSync(namesFile, fresh.map((n) => `${n}\n`).join(''));
    }
    const deadline = Date.now() + waitMs;
    for (;;) {
      // No queue has precedence (§8): the order of the names is shuffled.
      const missing = new Set(names.filter((n) => !client.exists(n)));
      const existing = shuffle(names.filter((n) => !missing.has(n)));
      const turn = new AbortController();
      const onGone = (): void => turn.abort();
      const onMade = (name: string): void => {
        if (missing.has(name)) turn.abort();
      };
      if (gone.aborted) turn.abort();
      else gone.addEventListener('abort', onGone);
      made.on('queue', onMade);
      let jobs: PulledJob[] = [];
      try {
        const left = Math.max(0, deadline - Date.now());
        if (existing.length > 0) jobs = await client.lease(existing, { owner: 'workq', ttr_ms: undefined, default_ttr_ms: DEFAULT_TTR_MS, count: 1, wait_ms: left, signal: turn.signal });
        else await abortableSleep(left, turn.signal);
      } finally {
        gone.removeEventListener('abort', onGone);
        made.off('queue', onMade);
      }
      const job = jobs[0];
      if (job) return leaseReply(job.ext_id ?? job.id, job.queue, job.ttr_ms ?? 0, Buffer.from(job.payload ?? '', 'base64'));
      if (gone.aborted || !turn.signal.aborted || Date.now() >= deadline) return TIMEOUT;
    }
  };

  const inspect = async (req: InspectRequest): Promise<Buffer> => {
    switch (req.what) {
      case 'server':
        await Promise.all(queueDirNames(ctx.root).map((q) => stats(q).catch(() => undefined)));
        return inspectReply([
          {
            label: 'server',
            pairs: [
              ['active-clients', clients],
              ['evicted-jobs', evicted.total],
              ['started', workqTime(started)],
            ],
          },
        ]);
      case 'queues': {
        const names = allNames().slice(req.offset, req.offset + req.limit);
        const records = [];
        for (const name of names) records.push(queueRecord(name, await stats(name)));
        return inspectReply(records);
      }
      case 'queue':
        if (!known(req.name)) return NOT_FOUND;
        return inspectReply([queueRecord(req.name, await stats(req.name))]);
      case 'jobs':
      case 'scheduled-jobs': {
        if (!known(req.name)) return NOT_FOUND;
        // Listed without payloads (100 of 1 MiB would not fit one reply of the queue socket), then each with its own.
        const listed = await client.list(req.name, req.what === 'jobs' ? 'ready' : 'delayed', req.offset, req.limit);
        const jobs: PulledJob[] = [];
        for (const job of listed) {
          const full = await client.peek(req.name, job.id, { all: true });
          if (full) jobs.push(full);
        }
        return inspectReply(jobs.map(jobRecord));
      }
      case 'job': {
        const target = locate(req.id);
        const job = target && (await client.peek(target.queue, target.id, { all: true }));
        return job ? inspectReply([jobRecord(job)]) : NOT_FOUND;
      }
    }
  };

  const run = async (req: WorkqRequest, gone: AbortSignal): Promise<Buffer> => {
    const now = Date.now();
    if ((req.cmd === 'add' || req.cmd === 'schedule' || req.cmd === 'run') && !mayTouch(req.name)) return CLOSED_NAME;
    if (req.cmd === 'lease' && !req.names.every(mayTouch)) return CLOSED_NAME;
    switch (req.cmd) {
      case 'add':
      case 'schedule': {
        const scheduled = req.cmd === 'schedule';
        const from = scheduled ? req.timeMs : now;
        const expiresAt = expiry(from, req.ttl);
        await publish(req.name, req.id, {
          payload: req.payload,
          priority: req.priority,
          rank: scheduled ? req.timeMs : UNSCHEDULED_RANK,
          ttr_ms: req.ttrMs,
          max_count: req.maxAttempts === 0 ? ATTEMPT_CAP : req.maxAttempts,
          max_attempts: req.maxAttempts,
          max_fails: req.maxFails,
          ttl: req.ttl.toString(),
          ...(expiresAt !== undefined ? { expires_at: expiresAt } : {}),
          ...(scheduled ? { due_at: req.timeMs, scheduled_at: req.timeMs } : {}),
        });
        return OK;
      }
      case 'run': {
        await publish(req.name, req.id, {
          payload: req.payload,
          priority: req.priority,
          rank: UNSCHEDULED_RANK,
          ttr_ms: req.ttrMs,
          max_count: ATTEMPT_CAP,
          ephemeral: true,
          expires_at: now + req.waitMs + req.ttrMs + RUN_MARGIN_MS,
        });
        try {
          const r = await client.resultWait(req.name, req.id, now + req.waitMs, { leaseGrace: true, signal: gone });
          return r ? resultReply(req.id, r.success, Buffer.from(r.result, 'base64')) : TIMEOUT;
        } finally {
          // Whatever the outcome, the job is gone once run has answered (§5.3).
          await client.remove(req.name, req.id).catch((e: unknown) => {
            if (!(e instanceof RqError && e.code === 'RQ_NOT_FOUND')) log.warn({ id: req.id, err: (e as Error).message }, 'cannot remove a run job; its TTL will');
          });
        }
      }
      case 'result': {
        const target = find(req.id);
        const r = await client.resultWait(target.queue, target.id, now + req.waitMs, { signal: gone });
        return r ? resultReply(req.id, r.success, Buffer.from(r.result, 'base64')) : TIMEOUT;
      }
      case 'lease':
        return lease(req.names, req.waitMs, gone);
      case 'complete':
      case 'fail': {
        const target = find(req.id);
        try {
          await client.finish(target.queue, target.id, { success: req.cmd === 'complete', result: req.result, status: `${req.cmd === 'complete' ? 'completed' : 'failed'} via workq` });
        } catch (e) {
          if (e instanceof RqError && e.code === 'RQ_NOT_IN_STATE') return clientError('Duplicate result');
          throw e;
        }
        return OK;
      }
      case 'delete': {
        if (req.ignore) return OK;
        const target = find(req.id);
        await client.remove(target.queue, target.id);
        return OK;
      }
      case 'inspect':
        return inspect(req);
    }
  };

  /** A failed command's reply, through ERROR_REPLIES; what went wrong inside is logged, never sent. */
  const answer = async (req: WorkqRequest, gone: AbortSignal): Promise<Buffer> => {
    try {
      return await run(req, gone);
    } catch (e) {
      const code = e instanceof RqError ? e.code : undefined;
      if (code !== 'RQ_NOT_FOUND' && code !== 'RQ_DUPLICATE') log.error({ cmd: req.cmd, err: coerceError(e).message }, 'workq command failed');
      if (code === undefined) return INTERNAL_ERROR;
      const reply = ERROR_REPLIES[code];
      return reply === OWN_TEXT ? serverError(oneLine(coerceError(e).message)) : reply;
    }
  };

  // Half-open: a client that sends its commands and shuts its side still gets every reply.
  return net.createServer({ allowHalfOpen: true }, (socket) => {
    clients++;
    const decoder = new WorkqDecoder(options);
    /** Aborted when the client sent its last byte (or went): waits end, so no job is leased for nobody (§8). */
    const gone = new AbortController();
    /** Decoded items in order; `upTo`: on the last item decoded from a chunk, the bytes received up to its end. */
    const waiting: Array<{ item: Decoded; upTo?: number }> = [];
    /** Bytes received (fed to the decoder), and bytes answered: the difference is what this connection holds. */
    let received = 0;
    let answered = 0;
    let busy = false;
    let ended = false;
    let closed = false;

    /** The bytes up to `upTo` are answered: they are not held any more. */
    const release = (upTo: number): void => {
      if (upTo <= answered) return;
      heldBytes -= upTo - answered;
      answered = upTo;
    };

    /** Read on, or stop reading, by the bounds of the file comment. */
    const flow = (): void => {
      if (ended || closed) return;
      const idle = waiting.length === 0 && !busy;
      if (idle || (waiting.length < MAX_QUEUED && received - answered < CONNECTION_BYTES && heldBytes < DOOR_BYTES)) socket.resume();
      else socket.pause();
    };

    const write = async (reply: Buffer): Promise<void> => {
      // Backpressure: a client that does not read its replies stops being served.
      if (socket.write(reply) || closed) return;
      await new Promise<void>((resolve) => {
        const go = (): void => {
          socket.off('drain', go);
          socket.off('close', go);
          resolve();
        };
        socket.on('drain', go);
        socket.on('close', go);
      });
    };

    const drain = async (): Promise<void> => {
      if (busy) return;
      busy = true;
      while (waiting.length > 0 && !closed) {
        const { item, upTo } = waiting.shift()!;
        flow();
        if ('close' in item) {
          if (item.http) {
            const peer = `${socket.remoteAddress}:${socket.remotePort}`;
            log.warn({ peer }, 'workq client sent HTTP (a request line or Host header), possibly a web page attacking this port; connection closed');
          }
          // §1: a framing violation closes the connection; the replies already written go first.
          waiting.length = 0;
          release(received);
          ended = true;
          socket.pause();
          break;
        }
        await write('reply' in item ? item.reply : await answer(item.request, gone.signal));
        if (upTo !== undefined) release(upTo);
      }
      busy = false;
      flow();
      if (ended && waiting.length === 0) socket.end();
    };

    socket.on('data', (chunk: Buffer) => {
      if (ended) return;
      received += chunk.length;
      heldBytes += chunk.length;
      const items = decoder.push(chunk);
      const upTo = received - decoder.pending;
      items.forEach((item, i) => waiting.push(i === items.length - 1 ? { item, upTo } : { item }));
      flow();
      void drain();
    });
    // EOF: answer what came whole (blocking ones as polls); a command cut off in the middle is dropped (§1).
    socket.on('end', () => {
      if (decoder.pending > 0) log.debug({ bytes: decoder.pending }, 'workq client closed in the middle of a command');
      ended = true;
      gone.abort();
      void drain();
    });
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clients--;
      closed = true;
      release(received);
      gone.abort();
    });
  });
}

function queueRecord(name: string, s: PullStats): { label: string; pairs: Array<readonly [string, number]> } {
  return {
    label: name,
    pairs: [
      ['ready-len', s.ready],
      ['scheduled-len', s.delayed],
    ],
  };
}

function readNames(file: string): string[] {
  try {
    return fs.readFileSync(file, 'utf8').split('\n').filter((n) => n !== '');
  } catch {
    return [];
  }
}

function shuffle<T>(items: T[]): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [items[i], items[j]] = [items[j]!, items[i]!];
  }
  return items;
}

function oneLine(text: string): string {
  return text.replace(/[\r\n]+/g, ' ');
}
