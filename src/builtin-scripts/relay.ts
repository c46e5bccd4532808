/**
 * The worker of the built-in `relay` queue (docs/relay.md), run by `libexec/relay_script`
 * once per message, with cwd `job/` of the message. It delivers the message to the rq
 * named by its URL `dest` through that rq's HTTP API, in RQ's two phases:
 *
 * 1. prep: `POST <RQ_DEST>/new_message` (form, `x_format=json`) with the keys
 *    `dest src count max_count param1..4 post_run_webhook orig_msg_id` that the message
 *    has, `count` + 1 and `"_method":"prep"` (`force_remote` is never sent). The remote
 *    full id it answers is kept in `job/relay_id`, written durably (fsync, rename, fsync
 *    of the directory), before anything else is sent. A run that finds `job/relay_id`
 *    skips this phase and reuses that remote message. An id on another origin than
 *    RQ_DEST's (a load balancer may answer so) is logged, and used.
 * 2. each attachment of the message (store/attachments.ts: regular files of `../attach`,
 *    not `.`-names, not `*.tmp`) goes to `<remote id>/attach/new` as multipart, streamed
 *    from disk, and the md5 the remote answers must be the file's own.
 * 3. commit: `job/relay_commit_sent` is written durably, then `POST <remote id>` with
 *    `_method=commit`; then `relayed <remote id>`.
 *
 * Every outcome is one line on fd 3 and exit 0: `relayed <id>`; `resend <n>-<reason>`
 * (a soft fail, retried by the queue after n = RQ_COUNT² × the backoff base, 10 s unless
 * the relay queue's `env_vars` set `RELAY_BACKOFF_SECS`); RQ's `fail …` (not a
 * completion, so the message ends in `err`) for RQ_COUNT > 15 and for a relay loop
 * (`RQ_ORIG_MSG_ID` starts with `RQ_DEST`); or `err <what>` for an error of the relay
 * itself (a bad `RELAY_BACKOFF_SECS`, an unreadable `../msg`) and for the two endings
 * below that name a remote message to check. Every HTTP request has a timeout; an
 * attachment's grows with its size. When fd 3 is closed (the local queue process died)
 * the line is only logged: the restarted queue process runs the message again. RQ's
 * port-3333 test hook is left out.
 *
 * Exactly once, where RQ is at least once. RQ starts over with a new remote
 * message whenever the remote answers `cannot find message`, which it also does when an
 * earlier commit went through but its reply was lost: the message is then delivered
 * twice. Here the remote message's state decides instead, whenever a step after prep
 * did not get its ok (attach or commit answered `cannot find message`; the commit's
 * reply was lost, late, or not ok):
 * - past prep (`que run done err relayed`): it was delivered; finish as `relayed`;
 * - still `prep`: soft fail and keep `job/relay_id`, the next run continues with it;
 * - gone, and no commit of it was sent (no `job/relay_commit_sent`, or only this run's
 *   commit, which the remote refused with `cannot find message`): it was deleted in prep;
 *   remove `job/relay_id`, soft fail; the next run preps a new remote message (and
 *   removes `job/relay_commit_sent` first);
 * - gone after a commit was sent: it was most likely delivered, run and then removed
 *   (cleaner, operator) before the relay learned it; starting over would deliver it
 *   twice, so end in `err`, naming the remote id;
 * - not known (remote down, queue process not answering, timeout): soft fail and keep
 *   `job/relay_id`, so nothing is sent twice while the answer is unknown.
 * A soft fail with `job/relay_id` kept on the last try (count + 1 reaches the message's
 * `max_count`, read from `../msg`: no RQ_* variable carries it) ends in `err` instead,
 * naming the remote id: the queue's `HIT MAX RESEND COUNT` would hide it, and a clone
 * of the local message may deliver it twice.
 * The state comes from `GET <remote id>/state.json`. Its 404 also stands for "the queue
 * process did not answer", so a 404 counts as gone only when the remote queue answers a
 * search for the id (`GET <remote root>search?name=<q>&query[msg_id]=<id>&exact=1`, a
 * 500 when its process does not answer) without it, and `state.json` still says 404
 * after that. `job/relay_id` (and `job/relay_commit_sent`) also stay after a success (RQ
 * removed `relay_id`): if the local queue process dies after `relayed` was written but
 * before the message moved, the run is repeated, finds the remote message past prep (or
 * gone after its commit: err) and does not send it again.
 * What is left: a prep whose reply is lost (or whose id could not be written) leaves
 * that remote message in `prep`, never committed; it is not delivered, twice or at all.
 */
import fs from 'node:fs';
import path from 'node:path';
import { RqError, errnoCode, explain } from '../domain/errors.js';
import { isPlainObject } from '../domain/message.js';
import { rubyToI } from '../domain/ruby.js';
import { writeFileDurably } from '../store/atomic.js';
import { attachmentNames, hashFile } from '../store/attachments.js';
import {
  MAX_COUNT,
  PAST_MAX_COUNT_LINE,
  exchange,
  log,
  readOwnMessage,
  resendLine,
  rqEnv,
  say,
  secondsFromEnv,
  type Exchange,
} from './worker-io.js';

/** The backoff base in seconds when `RELAY_BACKOFF_SECS` is unset. */
const DEFAULT_BACKOFF_SECS = 10;
/** The keys of the message the remote copy gets. */
const FORWARDED_KEYS = ['dest', 'src', 'count', 'max_count', 'param1', 'param2', 'param3', 'param4', 'post_run_webhook', 'orig_msg_id'] as const;
/** Remote states a message reaches only after its commit. */
const DELIVERED_STATES: ReadonlySet<string> = new Set(['que', 'run', 'done', 'err', 'relayed']);
const RELAY_ID_FILE = 'relay_id';
/** Written durably before every commit is sent; removed when a new prep starts. */
const COMMIT_SENT_FILE = 'relay_commit_sent';
/** The message's directory (the worker's cwd is its `job/`). */
const MSG_DIR = '..';
/** The time limit of a request without a file (prep, commit, state). */
const REQUEST_TIMEOUT_MS = 30_000;
/** A search walks the whole remote queue; the remote web gives its queue 60 s for it. */
const SEARCH_TIMEOUT_MS = 90_000;
/** An upload may take REQUEST_TIMEOUT_MS plus this long per MiB (at least 1 MiB/s). */
const ATTACH_MS_PER_MIB = 1_000;

/** How a run ends: the line it reports on fd 3. */
type Ending =
  | { type: 'relayed'; remoteId: string }
  | { type: 'resend'; reason: string }
  | { type: 'fail'; reason: string }
  | { type: 'err'; reason: string };


/** What the remote knows of a message: its state, that it has none, or that it cannot tell now. */
type RemoteState = { type: 'found'; state: string } | { type: 'gone' } | { type: 'unknown'; why: string };

/** A remote full id split into the remote's root URL (ending in `/`), its queue and the short id. */
interface RemoteId {
  full: string;
  root: string;
  queue: string;
  shortId: string;
}

/** This run's inputs, read once from the environment (the run's `RQ_*` and the queue's `env_vars`) and `../msg`. */
interface RelayRun {
  dest: string;
  origMsgId: string;
  count: number;
  /** The message, from `../msg`. */
  msg: Record<string, unknown>;
  /** The message's `max_count` (RQ's default 15): a resend that makes `count` reach it is the last. */
  maxCount: number;
  isForceRemote: boolean;
  /** `RELAY_BACKOFF_SECS`: a soft fail is retried after count² × this. @default 10 */
  backoffSecs: number;
}

const resend = (reason: string): Ending => ({ type: 'resend', reason });

/** RQ's patterns for a full id (a message URL), anchored at the end, so the root keeps `relative_root`; it must be a URL. */
function parseRemoteId(full: string): RemoteId | undefined {
  const m = /^(https?:\/\/.*\/)q\/([^/]+)\/([^/]+)$/.exec(full);
  return m && URL.canParse(full) ? { full, root: m[1]!, queue: m[2]!, shortId: m[3]! } : undefined;
}

const postForm = (url: string, fields: Record<string, string>): Promise<Exchange> =>
  exchange(url, { method: 'POST', body: new URLSearchParams(fields) }, REQUEST_TIMEOUT_MS);

/** An exchange for a status text: RQ's unreachable text, or the HTTP status and the start of the body. */
function describe(x: Exchange): string {
  if (x.type === 'unreachable') return `Could not connect to or parse URL: ${x.url} (${x.why})`;
  return `HTTP ${x.status} ${x.text.slice(0, 200)}`.trimEnd();
}

function isReplyOf(x: Exchange, word: string, text?: string): boolean {
  return x.type === 'reply' && x.status === 200 && Array.isArray(x.json) && x.json[0] === word && (text === undefined || x.json[1] === text);
}

const isCannotFind = (x: Exchange): boolean => isReplyOf(x, 'fail', 'cannot find message');

/** Whether a commit of the remote message in `job/relay_id` was ever sent. */
const hasCommitMarker = (): boolean => fs.existsSync(COMMIT_SENT_FILE);

/** The remote message of an earlier run, from `job/relay_id` (only prep writes it). */
function readRelayId(): RemoteId | undefined {
  let text: string;
  try {
    text = fs.readFileSync(RELAY_ID_FILE, 'utf8').trim();
  } catch (e) {
    if (errnoCode(e) === 'ENOENT') return undefined;
    throw e;
  }
  const id = parseRemoteId(text);
  if (id === undefined) throw new RqError('RQ_BAD_MESSAGE', `job/${RELAY_ID_FILE} must hold a message URL, got ${JSON.stringify(text)}`);
  return id;
}

/** `GET <id>/state.json`: the state, `missing` on a 404 (which may also mean "no answer"), or unknown. */
async function askState(id: RemoteId): Promise<RemoteState | { type: 'missing' }> {
  const x = await exchange(`${id.full}/state.json`, {}, REQUEST_TIMEOUT_MS);
  if (x.type === 'reply' && x.status === 404) return { type: 'missing' };
  if (x.type === 'reply' && x.status === 200 && Array.isArray(x.json) && typeof x.json[0] === 'string') return { type: 'found', state: x.json[0] };
  return { type: 'unknown', why: describe(x) };
}

/** Where the remote message is now; `gone` only when the remote queue answered without it (see the header). */
async function remoteState(id: RemoteId): Promise<RemoteState> {
  const first = await askState(id);
  if (first.type !== 'missing') return first;
  const query = new URLSearchParams({ name: id.queue, 'query[msg_id]': id.shortId, exact: '1' });
  const x = await exchange(`${id.root}search?${query.toString()}`, {}, SEARCH_TIMEOUT_MS);
  if (x.type !== 'reply' || x.status !== 200 || !Array.isArray(x.json)) return { type: 'unknown', why: `state.json said 404, the search ${describe(x)}` };
  const view: unknown = x.json[0];
  if (view !== undefined) {
    const state = isPlainObject(view) ? view['state'] : undefined;
    return typeof state === 'string' ? { type: 'found', state } : { type: 'unknown', why: `the search found it without a state: ${x.text.slice(0, 200)}` };
  }
  const second = await askState(id);
  return second.type === 'missing' ? { type: 'gone' } : second;
}

/**
 * A step after prep did not get its ok (`failure` says how): the remote message's state
 * decides between delivered, try again with the same id, and start over, which is only
 * safe when no commit of it can have gone through (`isCommitSent` false).
 */
async function settle(id: RemoteId, failure: string, isCommitSent: boolean): Promise<Ending> {
  const found = await remoteState(id);
  if (found.type === 'found' && DELIVERED_STATES.has(found.state)) {
    log(`Remote message [${id.full}] is already ${found.state}: an earlier attempt delivered it`);
    return { type: 'relayed', remoteId: id.full };
  }
  if (found.type === 'gone' && isCommitSent) {
    return { type: 'err', reason: `Remote message [${id.full}] gone after its commit was sent: most likely delivered and cleaned up; check ${id.full} before cloning` };
  }
  if (found.type === 'gone') {
    fs.rmSync(RELAY_ID_FILE, { force: true });
    return resend(`Remote message [${id.full}] disappeared. Getting new id.`);
  }
  if (found.type === 'found') return resend(`${failure} (remote message in ${found.state}; keeping its id)`);
  return resend(`${failure} (remote state unknown, keeping its id: ${found.why})`);
}

/** Phase 1: a remote message in prep; its full id, also in `job/relay_id`. */
async function prep(run: RelayRun): Promise<RemoteId | Ending> {
  const { msg } = run;
  const mesg: Record<string, unknown> = {};
  for (const key of FORWARDED_KEYS) if (Object.hasOwn(msg, key)) mesg[key] = msg[key];
  mesg['count'] = rubyToI(msg['count']) + 1;
  mesg['_method'] = 'prep';
  // A commit sent for an earlier remote message says nothing about the new one.
  fs.rmSync(COMMIT_SENT_FILE, { force: true });
  log(`attempting remote ${run.dest}`);
  const x = await postForm(`${run.dest.replace(/\/+$/, '')}/new_message`, { x_format: 'json', mesg: JSON.stringify(mesg) });
  if (x.type === 'unreachable') return resend(describe(x));
  const id = isReplyOf(x, 'ok') && typeof (x.json as unknown[])[1] === 'string' ? parseRemoteId((x.json as string[])[1]!) : undefined;
  if (id === undefined) return resend(`Couldn't queue message: ${describe(x)}`);
  writeFileDurably(RELAY_ID_FILE, id.full);
  log(`Now using relay_id: ${id.full}`);
  const destOrigin = new URL(run.dest).origin;
  const idOrigin = new URL(id.full).origin;
  if (idOrigin !== destOrigin) log(`The remote answered an id on ${idOrigin}, not on RQ_DEST's ${destOrigin}: the attachments and the commit go to ${id.full}`);
  return id;
}

/** Phase 2: every attachment, streamed from disk; an Ending when one did not arrive intact. */
async function sendAttachments(id: RemoteId): Promise<Ending | undefined> {
  for (const name of attachmentNames(MSG_DIR)) {
    const file = path.join(MSG_DIR, 'attach', name);
    const { md5 } = await hashFile(file);
    const blob = await fs.openAsBlob(file, { type: 'application/octet-stream' });
    log(`attaching ${name} (${blob.size} bytes, md5 ${md5})`);
    const form = new FormData();
    form.append('x_format', 'json');
    form.append('pathname', name);
    form.append('msg_id', id.shortId);
    form.append('filedata', blob, name);
    const x = await exchange(`${id.full}/attach/new`, { method: 'POST', body: form }, REQUEST_TIMEOUT_MS + Math.ceil((blob.size / 2 ** 20) * ATTACH_MS_PER_MIB));
    if (isCannotFind(x)) return settle(id, `Remote message [${id.full}] cannot be found in prep`, hasCommitMarker());
    if (x.type === 'unreachable') return resend(describe(x));
    if (x.status !== 200) return resend(`Couldn't attach to test message properly. - error ${x.status}`);
    if (!isReplyOf(x, 'ok')) return resend(`Couldn't attach to test message properly. - ${describe(x)}`);
    if (!isReplyOf(x, 'ok', `${md5}-Attached successfully`)) return resend("Couldn't attach to test message properly. - md5 mismatch");
  }
  return undefined;
}

/**
 * Phase 3: the commit, sent only after `job/relay_commit_sent` is on disk; any answer but
 * ok is settled by the remote message's state. A `cannot find message` refuses this
 * commit, so then only a commit of an earlier run can have gone through.
 */
async function commit(id: RemoteId): Promise<Ending> {
  const wasSentBefore = hasCommitMarker();
  writeFileDurably(COMMIT_SENT_FILE, id.full);
  const x = await postForm(id.full, { msg_id: id.shortId, _method: 'commit', x_format: 'json' });
  if (isReplyOf(x, 'ok')) return { type: 'relayed', remoteId: id.full };
  if (isCannotFind(x)) return settle(id, `Remote message [${id.full}] cannot be found in prep`, wasSentBefore);
  return settle(id, `Couldn't commit remote message [${id.full}]: ${describe(x)}`, true);
}

/** The phases still to do: prep unless `job/relay_id` names a remote message, attachments, commit. */
async function deliver(run: RelayRun): Promise<Ending> {
  const kept = readRelayId();
  if (kept !== undefined) log(`Reusing relay_id: ${kept.full}`);
  const id = kept ?? (await prep(run));
  if ('type' in id) return id;
  return (await sendAttachments(id)) ?? (await commit(id));
}

/**
 * A soft fail, unless it is the last try (the queue would end the message as
 * `HIT MAX RESEND COUNT`) and `job/relay_id` is kept: then the remote may hold the
 * message, so end in err with its id.
 */
function softFail(run: RelayRun, reason: string): Ending {
  const kept = run.count + 1 >= run.maxCount ? readRelayId() : undefined;
  if (kept === undefined) return resend(reason);
  return {
    type: 'err',
    reason: `${reason}; that was the last try (max_count ${run.maxCount}) and remote message [${kept.full}] may hold this message: check ${kept.full}/state.json before cloning`,
  };
}

/** One run: checks, then the phases still to do. */
async function relay(run: RelayRun): Promise<Ending> {
  log(`cwd - ${process.cwd()}`);
  if (run.count > MAX_COUNT) {
    say(PAST_MAX_COUNT_LINE);
    return { type: 'fail', reason: `RQ_COUNT > ${MAX_COUNT} FAIL` };
  }
  if (run.origMsgId.startsWith(run.dest)) return { type: 'fail', reason: 'Relay loop detected: RQ_DEST queue same as RQ_ORIG_MSG_ID' };
  log(`dest - ${run.dest}`);
  if (run.isForceRemote) log('FORCE REMOTE');
  const ending = await deliver(run);
  return ending.type === 'resend' ? softFail(run, ending.reason) : ending;
}

/** The line on fd 3 for an ending. */
function lineOf(run: RelayRun, ending: Ending): string {
  switch (ending.type) {
    case 'relayed':
      return `relayed ${ending.remoteId}`;
    case 'resend':
      return resendLine(run.count, run.backoffSecs, ending.reason);
    case 'fail':
    case 'err':
      return `${ending.type} ${ending.reason}`;
  }
}

/** The worker: relay this message, report how it ended; the exit status is always 0 (the line says how it ended). */
export async function main(): Promise<number> {
  let line: string;
  try {
    const msg = readOwnMessage();
    const run: RelayRun = {
      dest: rqEnv('DEST'),
      origMsgId: rqEnv('ORIG_MSG_ID'),
      count: rubyToI(rqEnv('COUNT')),
      msg,
      maxCount: rubyToI(msg['max_count'] ?? 15),
      isForceRemote: rqEnv('FORCE_REMOTE') !== '',
      backoffSecs: secondsFromEnv('RELAY_BACKOFF_SECS', DEFAULT_BACKOFF_SECS),
    };
    line = lineOf(run, await relay(run));
  } catch (e) {
    line = `err relay failed: ${explain(e).replaceAll('\n', ': ')}`;
  }
  try {
    say(line);
  } catch (e) {
    const code = errnoCode(e);
    if (code !== 'EPIPE' && code !== 'EBADF') throw e;
    log(`fd 3 is closed (${code}): the local queue process is gone, and runs this message again once restarted`);
  }
  return 0;
}
