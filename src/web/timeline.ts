/**
 * A message's life, for the message page: what happened to it and when, in order, each
 * entry read from where the fact already is on disk.
 *
 * - created: the time in the message's id (its allocation, to the millisecond); with it
 *   `src`, and `cloned_from`, `dup` and `orig_msg_id` from the message JSON, as links;
 * - due: the message's `due`, when it is later than its creation;
 * - each start, status line, exit and post-run webhook: the marker lines of its
 *   `job/timeline.log` (lib/log-markers.ts: RQ START, RQ STATUS, RQ EXIT, RQ WEBHOOK), with
 *   the webhook message's state asked of its queue. A message last run before rq wrote that
 *   file has its starts only, from the RQ START lines of its `job/stdio.log`;
 * - the end: the state and status the queue gives now, and `dups` (the duplicates that
 *   finished with it) from the message JSON.
 *
 * The file is scanned for the markers' tag without decoding it, and only its last
 * SCAN_BYTES: the start of a longer file is said to be left out.
 */
import fsp from 'node:fs/promises';
import path from 'node:path';
import { errnoCode } from '../domain/errors.js';
import { idTimeMs, parseFullId } from '../domain/ids.js';
import { dueMs } from '../domain/message.js';
import { localTimestamp } from '../lib/local-time.js';
import { MARKER_TAG, parseMarker, TIMELINE_LOG, type Marker } from '../lib/log-markers.js';
import type { MessageView } from '../rpc/queue-api.js';
import { shown } from './format.js';
import type { Gateway } from './gateway.js';
import { findMessage } from './lookups.js';
import { urlFor } from './render.js';

/** The end of a file the timeline reads: the markers of a longer file's start are left out. */
const SCAN_BYTES = 8 * 1024 * 1024;
/** How long a webhook message's queue is given to say where the message is, in ms. */
const WEBHOOK_ASK_MS = 2_000;

/** A piece of a shown value: text, and a link target when it is a link. */
export interface ValuePart {
  text: string;
  href?: string;
}

export interface TimelineEntry {
  kind: 'created' | 'due' | 'start' | 'status' | 'exit' | 'webhook' | 'end';
  /** Epoch ms, when the entry has a time. */
  at: number | undefined;
  /** The time as shown (the server's local time, as in the log), or ''. */
  time: string;
  title: string;
  parts: ValuePart[];
  /** Where the entry comes from, for the page's tooltip. */
  source: string;
}

export interface Timeline {
  entries: TimelineEntry[];
  /** The file of `job/` the markers were read from: `timeline.log`, or `stdio.log` for a message run before it. */
  file: string;
  /** Bytes at its start not read (their markers are not shown). */
  skipped: number;
  /** While the message runs: when its last run started, epoch ms (the page counts from it). */
  runningSince: number | undefined;
}

/** A value of the message JSON that holds a full id: a link to its message page here, else text. */
function idLink(value: unknown, root: string): ValuePart {
  const text = shown(value);
  const { queue, shortId } = parseFullId(text);
  return queue === undefined ? { text } : { text, href: urlFor(root, 'q', queue, shortId) };
}

/** `1234 ms` as `1.23 s`, `2 m 05 s` or `1 h 02 m`. */
export function durationText(ms: number): string {
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
  const s = Math.floor(ms / 1000);
  const two = (n: number): string => String(n).padStart(2, '0');
  if (s < 3600) return `${Math.floor(s / 60)} m ${two(s % 60)} s`;
  return `${Math.floor(s / 3600)} h ${two(Math.floor(s / 60) % 60)} m`;
}

/** The markers of a message's job directory `jobDir`: from its timeline.log, else the starts in its stdio.log. */
async function readTimeline(jobDir: string): Promise<{ file: string; markers: Marker[]; skipped: number }> {
  const own = await readMarkers(path.join(jobDir, TIMELINE_LOG));
  if (own !== undefined) return { file: TIMELINE_LOG, ...own };
  const old = await readMarkers(path.join(jobDir, 'stdio.log'));
  return { file: 'stdio.log', markers: old?.markers.filter((m) => m.word === 'START') ?? [], skipped: old?.skipped ?? 0 };
}

/** The markers in the last SCAN_BYTES of `file` and the bytes before them, or undefined when it does not exist. */
async function readMarkers(file: string): Promise<{ markers: Marker[]; skipped: number } | undefined> {
  let fh: fsp.FileHandle;
  try {
    fh = await fsp.open(file, 'r');
  } catch (e) {
    if (errnoCode(e) === 'ENOENT') return undefined;
    throw e;
  }
  try {
    const { size } = await fh.stat();
    const start = Math.max(0, size - SCAN_BYTES);
    const buf = Buffer.allocUnsafe(size - start);
    let got = 0;
    while (got < buf.length) {
      const { bytesRead } = await fh.read(buf, got, buf.length - got, start + got);
      if (bytesRead === 0) break;
      got += bytesRead;
    }
    const text = buf.subarray(0, got);
    const markers: Marker[] = [];
    for (let i = text.indexOf(MARKER_TAG); i >= 0; ) {
      const from = text.lastIndexOf(0x0a, i) + 1;
      const nl = text.indexOf(0x0a, i);
      const to = nl < 0 ? text.length : nl;
      // A line cut by the window's start is not a whole marker.
      const m = start > 0 && from === 0 ? undefined : parseMarker(text.toString('utf8', from, to));
      if (m) markers.push(m);
      i = nl < 0 ? -1 : text.indexOf(MARKER_TAG, nl);
    }
    return { markers, skipped: start };
  } finally {
    await fh.close();
  }
}

/** The entry of a RQ WEBHOOK marker (`<url> - <full id>`), with the webhook message's state now. */
async function webhookEntry(gw: Gateway, m: Marker, root: string): Promise<TimelineEntry> {
  const cut = m.text.lastIndexOf(' - ');
  const url = cut < 0 ? m.text : m.text.slice(0, cut);
  const parts: ValuePart[] = [{ text: `${url} ` }];
  const { queue, shortId } = parseFullId(cut < 0 ? '' : m.text.slice(cut + 3));
  if (queue !== undefined) {
    parts.push({ text: 'message', href: urlFor(root, 'q', queue, shortId) });
    const loc = await findMessage(gw, queue, shortId, WEBHOOK_ASK_MS).catch(() => undefined);
    if (loc === 'missing') parts.push({ text: ' (gone)' });
    else if (loc !== undefined) parts.push({ text: ` (${loc.status})` });
  }
  return { kind: 'webhook', at: m.at, time: m.time, title: 'Webhook queued', parts, source: `${TIMELINE_LOG}: RQ WEBHOOK; its state from the webhook queue` };
}

/** The timeline of the message `view` (short id `id`), shown on the page of queue `q`. */
export async function timelineOf(gw: Gateway, view: MessageView, q: string, id: string, root: string): Promise<Timeline> {
  const entries: TimelineEntry[] = [];
  const at = (ms: number | undefined): { at: number | undefined; time: string } => ({ at: ms, time: ms === undefined ? '' : localTimestamp(new Date(ms)) });

  const created = idTimeMs(id);
  const origin: ValuePart[][] = [];
  if (Object.hasOwn(view, 'src')) origin.push([{ text: `src ${shown(view.src)}` }]);
  if (typeof view.cloned_from === 'string') origin.push([{ text: 'clone of ' }, { text: view.cloned_from, href: urlFor(root, 'q', q, view.cloned_from) }]);
  if (view.dup !== undefined) origin.push([{ text: 'duplicate of ' }, idLink(view.dup, root)]);
  if (typeof view.orig_msg_id === 'string' && parseFullId(view.orig_msg_id).shortId !== id) origin.push([{ text: 'first of its chain: ' }, idLink(view.orig_msg_id, root)]);
  entries.push({ kind: 'created', ...at(created), title: 'Created', parts: joined(origin, '; '), source: 'the message id (its creation time); msg: src, cloned_from, dup, orig_msg_id' });

  const due = dueMs(view);
  if (Number.isFinite(due) && due > 0 && due <= 8.64e15 && (created === undefined || due >= created + 1000)) {
    entries.push({ kind: 'due', ...at(due), title: 'Due', parts: [], source: 'msg: due' });
  }

  const { file, markers, skipped } = await readTimeline(path.join(path.resolve(gw.root.root, view.path), 'job'));
  let attempt = 0;
  let lastStart: number | undefined;
  let lastExit: Marker | undefined;
  for (const m of markers) {
    const when = { at: m.at, time: m.time };
    if (m.word === 'START') {
      attempt++;
      lastStart = m.at;
      lastExit = undefined;
      const title = skipped > 0 ? 'Started' : `Started (attempt ${attempt})`;
      entries.push({ kind: 'start', ...when, title, parts: [{ text: `pid ${m.pid}, ${m.text}` }], source: `${file}: RQ START` });
    } else if (m.word === 'STATUS') {
      entries.push({ kind: 'status', ...when, title: 'Status', parts: [{ text: m.text }], source: `${file}: RQ STATUS (a line on the status pipe)` });
    } else if (m.word === 'EXIT') {
      lastExit = m;
      const [how = m.text, ran] = m.text.split(' - ');
      const ms = ran === undefined ? undefined : /^ran (\d+) ms$/.exec(ran)?.[1];
      const parts = [{ text: `pid ${m.pid}, ${how.replace(/^code /, 'exit code ')}` }];
      if (ms !== undefined) parts.push({ text: `, ran ${durationText(Number(ms))}` });
      entries.push({ kind: 'exit', ...when, title: 'Exited', parts, source: `${file}: RQ EXIT` });
    } else {
      entries.push(await webhookEntry(gw, m, root));
    }
  }

  const end = endEntry(view, root, lastExit);
  if (end) entries.push(end);
  // Stable, by whole seconds (the log's precision): what happened in one second keeps its order.
  const second = (e: TimelineEntry): number => (e.at === undefined ? Infinity : Math.floor(e.at / 1000));
  entries.sort((a, b) => second(a) - second(b));
  return { entries, file, skipped, runningSince: view.state === 'run' && lastExit === undefined ? lastStart : undefined };
}

/** The entry of a finished message (its final state and status, the duplicates that finished with it), or of a waiting one. */
function endEntry(view: MessageView, root: string, lastExit: Marker | undefined): TimelineEntry | undefined {
  // The status is `<state> - <text>`: the title says the state.
  const full = shown(view.status);
  const text = full.startsWith(`${view.state} - `) ? full.slice(view.state.length + 3) : full;
  const relayedTo = view.state === 'relayed' && /^https?:\/\/\S+$/i.test(text) ? text : undefined;
  const status: ValuePart[] = [relayedTo === undefined ? { text } : { text, href: relayedTo }];
  const source = 'the queue: the state and status now';
  if (view.state === 'done' || view.state === 'err' || view.state === 'relayed') {
    const dups = Array.isArray(view.dups) ? view.dups : [];
    if (dups.length > 0) status.push({ text: '; with its duplicates ' }, ...joined(dups.map((d) => [idLink(d, root)]), ', '));
    const when = lastExit === undefined ? { at: undefined, time: '' } : { at: lastExit.at, time: lastExit.time };
    return { kind: 'end', ...when, title: `Finished: ${view.state}`, parts: status, source: `${source}; msg: dups` };
  }
  if (view.state === 'que' && lastExit !== undefined) return { kind: 'end', at: lastExit.at, time: lastExit.time, title: 'Back in que', parts: status, source };
  return undefined;
}

/** Groups of parts, one after the other, with `sep` between them. */
function joined(groups: ValuePart[][], sep: string): ValuePart[] {
  return groups.flatMap((g, i) => (i === 0 ? g : [{ text: sep }, ...g]));
}
