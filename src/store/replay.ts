/**
 * Start-up replay of the journal (journal.ts) over the message directories, before
 * recovery (recover.ts) reads them: every change whose record is in the journal was
 * acknowledged, or may have been, and the directories are made to hold it.
 *
 * For each message with records since the last checkpoint, its last record says where
 * it is (a state, or gone) and the records hold the newest `msg`, status and small
 * attachments written. The message is looked for in its state, then in the others,
 * then in the trash:
 * - in its state: nothing to do, unless the journal may have lived through a power cut
 *   (it names another boot of the machine): then every file a record wrote is checked
 *   against the record, and one that is missing, cut short or older is written again;
 * - in another state: moved to its state and its recorded files written (a crash came
 *   between the record's sync and the rename). One exception: recorded in `que` but
 *   found in `run` without a power cut is a run claimed after the record (claims are not
 *   recorded), which recovery handles, maybe with its worker still alive;
 * - in the trash: it was removed after its record (a removal's record is not waited for);
 * - nowhere: made again from its records, unless one says that parts of it were made
 *   durable in place (big or linked attachments, an external id): such a message had
 *   not been acknowledged when its directory is missing;
 * - recorded gone: its directory is removed wherever it is.
 *
 * Replay writes without fsyncs: the journal keeps the records until the next checkpoint,
 * which the queue makes once replay has changed something.
 */
import fs from 'node:fs';
import path from 'node:path';
import { coerceError } from '../domain/errors.js';
import { isSafeId } from '../domain/ids.js';
import { STATES, type State } from '../domain/states.js';
import type { Logger } from '../lib/logger.js';
import type { Replay } from './journal.js';
import type { QueueLayout } from './layout.js';

/** Replay every message's records; returns how many messages it changed. */
export function replayJournal(layout: QueueLayout, records: ReadonlyMap<string, Replay>, afterPowerCut: boolean, log: Logger): number {
  let changed = 0;
  for (const [id, r] of records) {
    if (!isSafeId(id) || id.startsWith('_')) continue;
    try {
      if (replayOne(layout, id, r, afterPowerCut)) changed++;
    } catch (e) {
      log.error({ msg_id: id, err: coerceError(e).message }, 'cannot replay the journal for a message');
    }
  }
  if (changed > 0) log.warn({ messages: changed, after_power_cut: afterPowerCut }, 'journal replayed over the message directories');
  return changed;
}

/** Where message `id` is: its state (`first` looked at first), 'trash', or undefined. */
function locate(layout: QueueLayout, id: string, first: State | undefined): State | 'trash' | undefined {
  if (first !== undefined && fs.existsSync(layout.msgDir(first, id))) return first;
  for (const state of STATES) if (state !== first && fs.existsSync(layout.msgDir(state, id))) return state;
  for (const state of STATES) if (fs.existsSync(layout.trashEntry(state, id))) return 'trash';
  return undefined;
}

function replayOne(layout: QueueLayout, id: string, r: Replay, afterPowerCut: boolean): boolean {
  const at = locate(layout, id, r.to === 'gone' ? undefined : r.to);
  if (r.to === 'gone') {
    if (at === undefined || at === 'trash') return false;
    fs.rmSync(layout.msgDir(at, id), { recursive: true, force: true });
    return true;
  }
  if (at === 'trash') return false;
  const dir = layout.msgDir(r.to, id);
  if (at === undefined) {
    if (r.inPlace || !r.m) return false;
    fs.mkdirSync(dir, { recursive: true });
    writeParts(dir, r, false);
    return true;
  }
  if (at !== r.to) {
    if (at === 'run' && r.to === 'que' && !afterPowerCut) return false;
    fs.mkdirSync(path.dirname(dir), { recursive: true });
    fs.renameSync(layout.msgDir(at, id), dir);
    writeParts(dir, r, false);
    return true;
  }
  return afterPowerCut && writeParts(dir, r, true);
}

/** Write the recorded files of a message; with `onlyDiffering`, only those that differ on disk. Returns whether it wrote any. */
function writeParts(dir: string, r: Replay, onlyDiffering: boolean): boolean {
  const files: Array<[string, Buffer]> = [];
  if (r.m) files.push(['msg', Buffer.from(JSON.stringify(r.m))]);
  if (r.st) files.push(['status', Buffer.from(JSON.stringify(r.st))]);
  for (const [name, data] of Object.entries(r.a ?? {})) files.push([path.join('attach', name), Buffer.from(data, 'base64')]);
  let wrote = false;
  for (const [name, data] of files) {
    const file = path.join(dir, name);
    if (onlyDiffering && sameContent(file, data)) continue;
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, data);
    wrote = true;
  }
  return wrote;
}

function sameContent(file: string, data: Buffer): boolean {
  try {
    return fs.statSync(file).size === data.length && fs.readFileSync(file).equals(data);
  } catch {
    return false;
  }
}
