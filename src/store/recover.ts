/**
 * Start-up recovery of one queue's directories: what the queue process finds on disk when
 * it starts, and what it does with each half-finished shape, before it serves anything.
 * First the journal's records are replayed over the directories (replay.ts), so every
 * acknowledged change is where its record says; then `prep/_*` allocations are removed,
 * `run/` messages are kept (leased, or their worker from before the restart still alive)
 * or moved back to `que/`, and `que/` is listed against the journal's index entries (a
 * message listed without one is read from its `msg`; a message moved back from run is
 * read again, as a resend changed its due time). docs/internals/durability.md lists every
 * shape and what start-up does with it.
 */
import { coerceError } from '../domain/errors.js';
import type { Lease, Message } from '../domain/message.js';
import type { Logger } from '../lib/logger.js';
import type { QueueLayout } from './layout.js';
import type { MessageStore } from './message-store.js';
import { mayHavePowerCut, readJournal } from './journal.js';
import { entryFromMessage, type QueEntry } from './que-index.js';
import { replayJournal } from './replay.js';

/** A worker from before the restart, still alive (its pid, and when its pid file was written). */
export interface LiveWorker {
  pid: number;
  pidFileMs: number;
}

/** What recovery found: memory's first content. */
export interface Recovered {
  /** prep, newest first. */
  prep: string[];
  /** Leased messages, kept in run with their leases. */
  leased: Array<{ id: string; msg: Message; lease: Lease }>;
  /** Messages whose worker from before the restart is still alive. */
  orphans: Array<{ id: string; msg: Message; worker: LiveWorker }>;
  /** The waiting messages' index entries. */
  que: QueEntry[];
  /** The journal holds lines that are not exactly the waiting messages, or replay changed the directories: checkpoint. */
  staleIndex: boolean;
  /** Lines of the journal as read. */
  indexLines: number;
  /** The boots that wrote the journal. */
  boots: ReadonlySet<string>;
}

/**
 * Recover the queue's directories as the table above says. `liveWorker` tells whether a
 * run's `pid` names the same worker still alive (spawn/runner.ts).
 */
export function recoverQueue(store: MessageStore, layout: QueueLayout, log: Logger, liveWorker: (id: string) => LiveWorker | undefined): Recovered {
  const index = readJournal(layout.indexFile);
  const replayed = replayJournal(layout, index.records, mayHavePowerCut(index), log);
  const prep = store.sweepPrep().sort().reverse();
  const leased: Recovered['leased'] = [];
  const orphans: Recovered['orphans'] = [];
  // Ids moved back from run/: their index entries predate the run (a resend changes due).
  const fromRun = new Set<string>();
  for (const id of store.listFlat('run')) {
    let msg: Message | undefined;
    let unreadable: unknown;
    try {
      msg = store.readMsg('run', id);
    } catch (e) {
      unreadable = e;
    }
    if (msg?.lease) {
      leased.push({ id, msg, lease: msg.lease });
      continue;
    }
    const worker = liveWorker(id);
    if (worker) {
      if (msg) {
        orphans.push({ id, msg, worker });
        log.info({ msg_id: id, worker_pid: worker.pid }, 'worker from before the restart is still running');
        continue;
      }
      log.warn({ msg_id: id, err: coerceError(unreadable).message }, 'cannot read running message');
    }
    try {
      store.unclaim(id);
      fromRun.add(id);
    } catch (e) {
      log.error({ msg_id: id, err: coerceError(e).message }, 'cannot move run message back to que');
    }
  }
  const que: QueEntry[] = [];
  let reindexed = 0;
  for (const id of store.listFlat('que')) {
    let entry = fromRun.has(id) ? undefined : index.entries.get(id);
    if (!entry) {
      try {
        const msg = store.readMsg('que', id);
        if (msg.due === undefined || msg.due === null) {
          msg.due = Math.floor(Date.now() / 1000);
          store.writeMsg('que', id, msg);
        }
        entry = entryFromMessage(msg);
        reindexed++;
      } catch (e) {
        log.error({ msg_id: id, err: coerceError(e).message }, 'unreadable message left in que');
        continue;
      }
    }
    que.push(entry);
  }
  return {
    prep,
    leased,
    orphans,
    que,
    staleIndex: index.entryLines !== que.length || reindexed > 0 || replayed > 0,
    indexLines: index.lines,
    boots: index.boots,
  };
}
