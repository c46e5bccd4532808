/**
 * The upkeep of `que` in memory and of the queue's journal on disk (journal.ts): a message
 * entering que, the checkpoint that makes the directories durable and cuts the journal
 * down to an index line per waiting message (through the group committer, which swaps
 * the file only between flushes), and the entries an operator drops into `que/` by hand.
 */
import { coerceError } from '../domain/errors.js';
import { isSafeId } from '../domain/ids.js';
import type { Message } from '../domain/message.js';
import { writeJournal } from '../store/journal.js';
import { entryFromMessage, journalLine, type QueEntry } from '../store/que-index.js';
import { syncFilesystem } from '../store/syncfs.js';
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

/** Append index or boot lines durably; they commit no change, so a failure is only logged. */
export function journal(s: QueueState, lines: string): Promise<void> {
  return s.committer.commit({ journal: lines }).catch((e: unknown) => {
    s.log.warn({ err: coerceError(e).message }, 'cannot append to the journal');
  });
}

/**
 * A checkpoint (group-commit.ts): the filesystem synced, then the journal rewritten with
 * exactly the waiting messages (held duplicates included), from memory, followed by the
 * records the sync may not have covered.
 */
export function checkpoint(s: QueueState): Promise<void> {
  if (s.dispatch.checkpointing) return Promise.resolve();
  s.dispatch.checkpointing = true;
  const file = s.layout.indexFile;
  return s.committer
    .checkpoint(
      file,
      () => syncFilesystem(s.layout.dir),
      (tail) => {
        const entries = [...s.que];
        for (const list of s.held.values()) entries.push(...list);
        return writeJournal(file, entries, tail);
      },
    )
    .catch((e: unknown) => s.log.warn({ err: coerceError(e).message }, 'cannot checkpoint the journal'))
    .finally(() => (s.dispatch.checkpointing = false));
}

/** A journal with this many bytes of records since the last checkpoint is checkpointed (start-up reads it whole). */
const CHECKPOINT_BYTES = 64 << 20;

/**
 * Checkpoint once the journal is long (the 1 s tick): many records since the last one
 * (replay at start-up reads each), or many lines for the messages waiting.
 */
export function checkpointIfLong(s: QueueState): void {
  const c = s.committer;
  const since = c.appended();
  if (since.lines > s.indexCompactLines || since.bytes > CHECKPOINT_BYTES || c.journalLines() > Math.max(s.indexCompactLines, s.que.size * 4)) void checkpoint(s);
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
