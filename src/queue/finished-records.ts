/**
 * Finished records: what the queue page lists and filters of a message in done, relayed
 * or err (when its last run started and ended, how it exited, its count, src, params and
 * status line), kept in memory so that a filter or a sort over 100,000 finished messages
 * reads no file. A record is made when the move into its state has committed, from the
 * run in memory, and forgotten when the message leaves the state; every move of the
 * queue goes through the store, so `recordingStore` wraps the store's moves and misses
 * none.
 *
 * It is only a cache, kept in `finished.index` in the queue's directory, one JSON line
 * per record, appended once per turn (one write for every finish of the turn, no fsync:
 * a crash loses at most the last turn's lines, and those messages are listed from their
 * files, as are messages finished before records were kept). At start-up the journal is
 * read, a record is kept only when its message is still in its state, and the journal is
 * rewritten with the kept ones; it is rewritten again whenever it holds more than twice
 * as many lines as there are records. Params and src are kept as the que index keeps
 * them (a big one as a digest, read from `msg` when a filter needs it); a status line of
 * more than MAX_STATUS_CHARS is not kept (read from its file when needed).
 */
import fs from 'node:fs';
import path from 'node:path';
import { PARAM_KEYS, isPlainObject, type Message } from '../domain/message.js';
import type { State } from '../domain/states.js';
import type { MessageStore, MoveOptions } from '../store/message-store.js';
import { BigParam, compactParams, indexedParam, journalParams, lineParams, type QueEntry } from '../store/que-index.js';

/** A status line longer than this is read from its file, not kept. */
const MAX_STATUS_CHARS = 512;
/** The journal is rewritten once it holds more lines than this and than twice the records. */
const MIN_COMPACT_LINES = 1_000;

export type FinalState = 'done' | 'relayed' | 'err';

/** What a record takes from a message's run (state.ts RunEntry). */
interface RunFacts {
  msg: Message;
  startedAt?: number;
  exit?: string;
}

/** What a record takes of the message itself: from its `msg`, or from its que index entry. */
type Facts = Pick<FinishedRecord, 'count' | 'src' | 'params'>;

function factsOfMsg(msg: Message): Facts {
  return {
    count: typeof msg.count === 'number' ? msg.count : null,
    src: msg.src === undefined || msg.src === null ? undefined : indexedParam(msg.src),
    params: compactParams(PARAM_KEYS.map((k) => msg[k] ?? null)),
  };
}

/** An entry's facts, when it knows them (a line of an older journal does not). */
function factsOfEntry(e: QueEntry): Facts | undefined {
  return e.count === undefined ? undefined : { count: e.count, src: e.src, params: e.params };
}
const isFinal = (st: State): st is FinalState => st === 'done' || st === 'relayed' || st === 'err';

export interface FinishedRecord {
  id: string;
  state: FinalState;
  /** When its last run started (epoch ms); null when it never ran (a duplicate) or it is unknown. */
  started: number | null;
  /** When it entered its state (epoch ms). */
  finished: number;
  /** How its worker ended: the exit code as text, or the signal; null when no worker exited (a lease, a spawn failure). */
  exit: string | null;
  count: number | null;
  /** Its src as the que index keeps a param (a BigParam when big); undefined when it has none. */
  src: unknown;
  params: readonly unknown[];
  /** The status file's line, as the move wrote it; undefined when not kept (read the file). */
  line: string | undefined;
}

export class FinishedRecords {
  private readonly byId = new Map<string, FinishedRecord>();
  /** Per state, its records' ids newest first, made when asked and dropped at every change. */
  private sorted = new Map<FinalState, string[]>();
  private readonly sizes: Record<FinalState, number> = { done: 0, relayed: 0, err: 0 };
  private fd: number | undefined;
  private lines = 0;
  private pending = '';
  private readonly file: string;

  constructor(queueDir: string) {
    this.file = path.join(queueDir, 'finished.index');
  }

  get(id: string): FinishedRecord | undefined {
    return this.byId.get(id);
  }

  /** How many messages of `state` have a record. */
  size(state: FinalState): number {
    return this.sizes[state];
  }

  /** The ids of `state` that have a record, newest first (the `messages` order of done, relayed and err). */
  ids(state: FinalState): readonly string[] {
    let ids = this.sorted.get(state);
    if (ids === undefined) {
      ids = [...this.byId.values()].filter((r) => r.state === state).map((r) => r.id).sort().reverse();
      this.sorted.set(state, ids);
    }
    return ids;
  }

  /** Start-up: the journal's records whose message is still in its state; the journal rewritten with them. */
  load(stillThere: (state: FinalState, id: string) => boolean): void {
    let text = '';
    try {
      text = fs.readFileSync(this.file, 'utf8');
    } catch {
      // no journal yet
    }
    for (const line of text.split('\n')) {
      const r = line === '' ? undefined : parseLine(line);
      if (r === undefined) continue;
      this.drop(r.id);
      if (stillThere(r.state, r.id)) this.put(r);
    }
    this.rewrite();
  }

  add(r: FinishedRecord): void {
    this.drop(r.id);
    this.put(r);
    this.append(journalText(r));
  }

  /** The message left its state (or was rewritten there): its record is gone. */
  forget(id: string): void {
    if (this.drop(id)) this.append(`${JSON.stringify({ i: id })}\n`);
  }

  close(): void {
    this.flush();
    if (this.fd !== undefined) fs.closeSync(this.fd);
    this.fd = undefined;
  }

  private put(r: FinishedRecord): void {
    this.byId.set(r.id, r);
    this.sizes[r.state]++;
    this.sorted.delete(r.state);
  }

  private drop(id: string): boolean {
    const old = this.byId.get(id);
    if (old === undefined) return false;
    this.byId.delete(id);
    this.sizes[old.state]--;
    this.sorted.delete(old.state);
    return true;
  }

  private append(text: string): void {
    if (this.pending === '') setImmediate(() => this.flush());
    this.pending += text;
    this.lines++;
  }

  private flush(): void {
    if (this.pending === '') return;
    const text = this.pending;
    this.pending = '';
    try {
      if (this.lines > MIN_COMPACT_LINES && this.lines > 2 * this.byId.size) {
        this.rewrite();
        return;
      }
      this.fd ??= fs.openSync(this.file, 'a');
      fs.writeSync(this.fd, text);
    } catch {
      // a cache: what is not written is read from the messages' files
    }
  }

  /** Replace the journal with the records in memory (tmp, rename; no fsync: a cache). */
  private rewrite(): void {
    this.pending = '';
    if (this.fd !== undefined) fs.closeSync(this.fd);
    this.fd = undefined;
    const tmp = `${this.file}.tmp`;
    try {
      fs.writeFileSync(tmp, [...this.byId.values()].map(journalText).join(''));
      fs.renameSync(tmp, this.file);
      this.lines = this.byId.size;
    } catch {
      // tried again at the next change
    }
  }
}

function journalText(r: FinishedRecord): string {
  const src = r.src instanceof BigParam ? { sd: r.src.digest } : r.src;
  return `${JSON.stringify({ i: r.id, t: r.state, b: r.started, f: r.finished, x: r.exit, c: r.count, s: src, p: journalParams(r.params), l: r.line })}\n`;
}

/** A record of a journal line; undefined for a forget line, or a torn or foreign one. */
function parseLine(line: string): FinishedRecord | undefined {
  let o: unknown;
  try {
    o = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (!isPlainObject(o) || typeof o['i'] !== 'string' || typeof o['t'] !== 'string' || !isFinal(o['t'] as State) || typeof o['f'] !== 'number') return undefined;
  const params = lineParams(o['p']);
  if (params === undefined) return undefined;
  const num = (x: unknown): number | null => (typeof x === 'number' ? x : null);
  const src = o['s'];
  const status = o['l'];
  return {
    id: o['i'],
    state: o['t'] as FinalState,
    started: num(o['b']),
    finished: o['f'],
    exit: typeof o['x'] === 'string' ? o['x'] : null,
    count: num(o['c']),
    src: isPlainObject(src) && typeof src['sd'] === 'string' ? new BigParam(src['sd']) : src,
    params: compactParams(params),
    line: typeof status === 'string' ? status : undefined,
  };
}

/** The record of a message that has just entered `state`, from what is known of it and of its run (when it ran). */
function recordOf(id: string, state: FinalState, facts: Facts, run: RunFacts | undefined, opts: MoveOptions): FinishedRecord {
  const started = run?.startedAt ?? run?.msg.lease?.at ?? null;
  // The move writes the status given; without one, the file an earlier run wrote may be there (read when needed).
  const given = opts.status === undefined ? undefined : (opts.status ?? '');
  const line = given !== undefined && given.length <= MAX_STATUS_CHARS ? given : undefined;
  return { id, state, started, finished: Date.now(), exit: run?.exit ?? null, ...facts, line };
}

/**
 * The store, with every move into or out of done, relayed and err told to `records`: a
 * move into one of them adds the message's record (from the `msg` the move wrote, else
 * its run's, else its que index entry, taken before the move; a message of none is not
 * recorded, and is listed from its files), a move out of one, a removal or a rewrite
 * there forgets it.
 */
export function recordingStore(store: MessageStore, records: FinishedRecords, runOf: (id: string) => RunFacts | undefined, queued: (id: string) => QueEntry | undefined): MessageStore {
  return {
    ...store,
    async move(id, from, to, opts = {}) {
      const run = runOf(id);
      const msg = opts.msg ?? run?.msg;
      const entry = msg === undefined && from === 'que' ? queued(id) : undefined;
      await store.move(id, from, to, opts);
      if (isFinal(from)) records.forget(id);
      const facts = msg !== undefined ? factsOfMsg(msg) : entry !== undefined ? factsOfEntry(entry) : undefined;
      if (facts !== undefined) records.add(recordOf(id, to, facts, run, opts));
    },
    async enqueue(id, from, opts) {
      const entry = await store.enqueue(id, from, opts);
      if (isFinal(from)) records.forget(id);
      return entry;
    },
    async rewrite(state, id, opts) {
      await store.rewrite(state, id, opts);
      if (isFinal(state)) records.forget(id);
    },
    async remove(state, id) {
      await store.remove(state, id);
      if (isFinal(state)) records.forget(id);
    },
    discard(state, id) {
      const gone = store.discard(state, id);
      if (gone) records.forget(id);
      return gone;
    },
  };
}
