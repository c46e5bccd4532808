/**
 * The upkeep of `que` in memory and of its index on disk (que-index.ts): a message entering
 * que, the index journal (appended to by every commit into que) and its compaction from
 * memory through the group committer, which swaps the file only between flushes, and the
 * entries an operator drops into `que/` by hand.
 */
import { coerceError } from '../domain/errors.js';
import { isSafeId } from '../domain/ids.js';
import type { Message } from '../domain/message.js';
import { entryFromMessage, journalLine, writeIndex, type QueEntry } from '../store/que-index.js';
import { nowSec, type QueueState } from './state.js';

/** Watch a waiting or leased message's TTL (an instant in epoch ms), if it has one. */
export function watchTtl(s: QueueState, id: string, at: unknown): void {
  if (typeof at === 'number') s.pull.expiries.set(id, at);
}

/** A message has entered que: list it, watch its TTL, and dispatch (a script, or a waiting lease). */
export function queued(s: QueueState, entry: QueEntry): void {
  s.que.insert(entry);
  s.log.debug({ msg_id: entry.id }, 'message queued');
  watchTtl(s, entry.id, entry.pull?.e);
  s.nudge();
}

/** Append index lines durably; the index is a cache, so a failure is only logged. */
export function journal(s: QueueState, lines: string): Promise<void> {
  return s.committer.commit({ journal: lines }).catch((e: unknown) => {
    s.log.warn({ err: coerceError(e).message }, 'cannot append to the que index');
  });
}

/**
 * Rewrite the que index with exactly the waiting messages (held duplicates included),
 * from memory, when the committer is between flushes (see group-commit.ts).
 */
export function compactIndex(s: QueueState): void {
  if (s.dispatch.compacting) return;
  s.dispatch.compacting = true;
  const file = s.layout.indexFile;
  void s.committer
    .replaceJournal(file, () => {
      const entries = [...s.que];
      for (const list of s.held.values()) entries.push(...list);
      writeIndex(file, entries);
      return entries.length;
    })
    .catch((e: unknown) => s.log.warn({ err: coerceError(e).message }, 'cannot compact the que index'))
    .finally(() => (s.dispatch.compacting = false));
}

/** Compact the index once its journal is long (the 1 s tick). */
export function compactIfLong(s: QueueState): void {
  if (s.committer.journalLines() > Math.max(s.indexCompactLines, s.que.size * 4)) compactIndex(s);
}

/**
 * A hint (file watch) that `que/<id>` appeared or vanished. The queue's own renames
 * are recognised from memory; a directory an operator dropped in is read and queued
 * (retried while its `msg` is still being written), one removed by hand is forgotten.
 */
export function noticeQueName(s: QueueState, id: string, attempt = 0): void {
  if (!isSafeId(id) || id.startsWith('_') || s.heldIds.has(id) || s.run.has(id)) return;
  if (s.locks.isBusy(id)) {
    // Being moved or changed: look again once that is over.
    void s.locks.settled(id).then(() => noticeQueName(s, id, attempt));
    return;
  }
  const { store } = s;
  if (s.que.has(id)) {
    if (!store.exists('que', id)) s.que.remove(id);
    return;
  }
  if (!store.exists('que', id)) return;
  let msg: Message;
  try {
    msg = store.readMsg('que', id);
  } catch {
    if (attempt < 20) setTimeout(() => noticeQueName(s, id, attempt + 1), 250).unref();
    return;
  }
  if (msg.due === undefined || msg.due === null) {
    msg.due = nowSec();
    store.writeMsg('que', id, msg);
  }
  const entry = entryFromMessage(msg);
  void journal(s, journalLine(entry)).then(() => {
    if (s.locks.isBusy(id)) return noticeQueName(s, id, attempt);
    if (!s.que.has(id) && !s.run.has(id) && store.exists('que', id)) {
      s.que.insert(entry);
      s.log.info({ msg_id: id }, 'picked up a message added to que/ by hand');
      s.nudge();
    }
  });
}
