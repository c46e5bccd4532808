/**
 * The queue process's RPC command table (spec/rq.md §5.2): parse the argument, call the
 * engine's verb, render RQ's exact reply. This is the RPC front door's one mapping from
 * RqError to RQ's vocabulary: `["fail", <the error's RQ text>]`, except the attachment
 * deletions, which RQ answers with `[false, text]`.
 *
 * Beyond RQ, for the web: `messages` takes an `offset` (paging; a paged reply gives every
 * message's status text), and two commands are added: `search` (RQ's `GET /search` as a
 * command, paged, with an optional free text) and `stats` (the dashboard's whole view of
 * the queue in one reply, with the counters since the queue process started). `clean`
 * removes old finished messages (housekeeping.ts); it is refused while DOWN, like the others.
 * The pull commands (pull.ts: publish, lease, ack, …) are the protocol front doors' and
 * external workers' verbs; their refusals carry the error's stable code as a third
 * element, `["fail", text, code]`, which RQ's two-element readers ignore. So do the
 * refusals of `run_message` and `clone_message`, which the web turns into an HTTP status,
 * and every command's refusal for a full disk (`RQ_NO_SPACE`: `no space left on device:
 * queues/<q>`), which RQ never gave; that refusal also tells the engine the disk is full.
 * An argument nested deeper than MAX_JSON_DEPTH is refused before any command sees it.
 * The commands that create a message (`create_message`, `prep_message`, `single_que`,
 * `publish`) announce its id before the commit when the argument has `"_announce": true`
 * (rpc.ts): the full id, or the short id for `publish`, as their replies name it.
 *
 * The admin flags are re-read for `status` and `stats` only (spec/rq.md §1.11). The DOWN
 * check uses the value last read, which the flag files' watch (hints.ts) keeps current:
 * inotify queues the event as the file is made, and the queue's event loop handles it
 * no later than the accept of a connection made afterwards, before reading its request.
 */
import type { RpcConnection } from '../rpc/server.js';
import { RqError, coerceError, isNoSpace, type ErrorCode } from '../domain/errors.js';
import { parseFullId } from '../domain/ids.js';
import { MAX_JSON_DEPTH, isTooDeep } from '../domain/json-depth.js';
import { isPlainObject } from '../domain/message.js';
import { parseCleanArgument } from '../domain/retention.js';
import { STATES, isState, type State } from '../domain/states.js';
import type { Logger } from '../lib/logger.js';
import type { Allocated } from '../store/message-store.js';
import type { QueueEngine, SearchQuery } from './queue-engine.js';

type Handler = (engine: QueueEngine, arg: Record<string, unknown>, conn?: RpcConnection) => unknown;

/** Commands that answer even while the queue is admin DOWN. */
const NO_DOWN_CHECK = new Set(['ping', 'uptime', 'config', 'status', 'shutdown', 'num_messages', 'messages', 'stats']);

/** The announcement of a new message's id to a client that asked for it (`"_announce": true`), `shown` as its reply names it. */
function announcer(arg: Record<string, unknown>, conn: RpcConnection | undefined, shown: (shortId: string) => string): Allocated | undefined {
  if (arg['_announce'] !== true || conn === undefined) return undefined;
  return (shortId) => conn.announce(shown(shortId));
}

/** The short id of `msg_id`; a full id (message URL) is split with RQ's pattern. */
function msgId(arg: Record<string, unknown>): string {
  if (!('msg_id' in arg)) throw new RqError('RQ_BAD_REQUEST', "lacking 'msg_id' field");
  return parseFullId(String(arg['msg_id'])).shortId;
}

/** An optional count (`offset`, `limit`): an integer >= 0; absent or null is undefined. */
function optionalCount(arg: Record<string, unknown>, key: string): number | undefined {
  const value = arg[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) {
    throw new RqError('RQ_BAD_REQUEST', `'${key}' must be an integer >= 0, got ${JSON.stringify(value)}`);
  }
  return value;
}

/**
 * The argument of `search`: `{"query": {field: text}?, "text"?, "exact"?, "states"?,
 * "offset"?, "limit"?}`; `text` is free text, a non-empty string (absent or null: none).
 */
function searchQuery(arg: Record<string, unknown>): SearchQuery {
  const query = arg['query'] ?? {};
  if (!isPlainObject(query) || !Object.values(query).every((v) => typeof v === 'string')) {
    throw new RqError('RQ_BAD_REQUEST', `'query' must be an object of strings, got ${JSON.stringify(query)}`);
  }
  const exact = arg['exact'] ?? false;
  if (typeof exact !== 'boolean') throw new RqError('RQ_BAD_REQUEST', `'exact' must be true or false, got ${JSON.stringify(exact)}`);
  const text = arg['text'] ?? undefined;
  if (text !== undefined && (typeof text !== 'string' || text === '')) {
    throw new RqError('RQ_BAD_REQUEST', `'text' must be a non-empty string, got ${JSON.stringify(text)}`);
  }
  const states = arg['states'] ?? STATES;
  if (!Array.isArray(states) || !states.every(isState)) {
    throw new RqError('RQ_BAD_REQUEST', `'states' must be an array of states (${STATES.join(', ')}), got ${JSON.stringify(states)}`);
  }
  return {
    query: query as Record<string, string>,
    exact,
    ...(text !== undefined ? { text } : {}),
    states: states as State[],
    offset: optionalCount(arg, 'offset') ?? 0,
    limit: optionalCount(arg, 'limit') ?? Infinity,
  };
}

const COMMANDS: Record<string, Handler> = {
  ping: () => ['pong'],
  uptime: (e) => [e.uptimeSec()],
  status: (e) => {
    e.refreshFlags();
    return [e.status()];
  },
  config: (e) => {
    const c = e.config;
    return [
      'ok',
      {
        name: c.name,
        script: c.script,
        num_workers: c.num_workers,
        exec_prefix: c.exec_prefix,
        env_vars: c.env_vars,
        coalesce_params: c.coalesce_params,
        blocking_params: c.blocking_params,
        schedule: c.schedule.map((s) => ({ cron: s.cron, cron_obj: '<opaque>', params: s.params })),
        ...(c.timeout !== null ? { timeout: c.timeout } : {}),
      },
    ];
  },
  num_messages: (e) => e.numMessages(),
  messages: (e, arg) => {
    const state = arg['state'];
    if (!isState(state)) return ['fail', `invalid or missing 'state' field (${String(state ?? '')})`];
    const offset = optionalCount(arg, 'offset');
    const limit = optionalCount(arg, 'limit') ?? Infinity;
    // RQ listed all of err whatever the limit (spec/rq.md §5.2); a paged call gets its page.
    if (offset === undefined) return e.messages(state, 0, state === 'err' ? Infinity : limit, false);
    return e.messages(state, offset, limit, true);
  },
  search: async (e, arg) => ['ok', await e.search(searchQuery(arg))],
  // The web's QueueStatus (src/web/queue-info.ts) is this reply's type.
  stats: (e) => {
    e.refreshFlags();
    return {
      pid: process.pid,
      status: e.status(),
      admin: e.adminStatus(),
      uptime: e.uptimeSec(),
      counts: e.numMessages(),
      schedule: e.cron.describe(),
      ...e.stats.snapshot(),
      // Beyond RQ: the retention limits, and the last disk usage measured (null before the first).
      cleaner: e.config.cleaner,
      disk: e.housekeeping.diskUsage(),
    };
  },
  // Beyond RQ: remove the done, relayed and err messages over the queue's limits (housekeeping.ts).
  clean: async (e, arg) => ['ok', await e.housekeeping.clean(e.config.cleaner, parseCleanArgument(arg))],
  create_message: async (e, arg, conn) => ['ok', await e.create(arg, 'que', announcer(arg, conn, (id) => e.fullId(id)))],
  prep_message: async (e, arg, conn) => ['ok', await e.create(arg, 'prep', announcer(arg, conn, (id) => e.fullId(id)))],
  single_que: async (e, arg, conn) => ['ok', await e.singleQue(arg, announcer(arg, conn, (id) => e.fullId(id)))],
  commit_message: async (e, arg) => {
    await e.commit(msgId(arg));
    return ['ok', 'msg commited'];
  },
  attach_message: async (e, arg) => ['ok', `${await e.attach(msgId(arg), arg['pathname'], arg['name'])}-Attached successfully`],
  delete_attach_message: async (e, arg) => {
    try {
      await e.deleteAttachment(msgId(arg), arg['attachment_name']);
    } catch (err) {
      if (err instanceof RqError && err.code === 'RQ_ATTACH') return [false, err.message];
      throw err;
    }
    return ['ok', 'Attachment deleted successfully'];
  },
  get_message: async (e, arg) => ['ok', await e.getMessage(msgId(arg))],
  get_message_state: async (e, arg) => {
    const state = await e.stateNow(msgId(arg));
    return state === undefined ? ['fail', 'msg not found'] : ['ok', state];
  },
  get_message_status: async (e, arg) => ['ok', await e.getStatus(msgId(arg))],
  delete_message: async (e, arg) => {
    await e.deleteMessage(msgId(arg));
    return ['ok', 'msg deleted'];
  },
  destroy_message: async (e, arg) => {
    await e.destroy(msgId(arg));
    return ['ok', 'msg destroyed'];
  },
  run_message: async (e, arg) => {
    await e.runNow(msgId(arg));
    return ['ok', 'msg sent to front of run queue'];
  },
  clone_message: async (e, arg) => ['ok', await e.clone(msgId(arg))],
  // Beyond RQ: the pull model (pull.ts), for external workers and the protocol front doors.
  publish: async (e, arg, conn) => ['ok', await e.pull.publish(arg, announcer(arg, conn, (id) => id))],
  lease: async (e, arg, conn) => ['ok', await e.pull.lease(arg, conn)],
  cancel_wait: (e, arg) => ['ok', e.pull.cancelWait(arg)],
  ack: async (e, arg) => ['ok', await e.pull.ack(arg)],
  nack: async (e, arg) => ['ok', await e.pull.nack(arg)],
  touch: async (e, arg) => ['ok', await e.pull.touch(arg)],
  set: async (e, arg) => ['ok', await e.pull.set(arg)],
  peek: async (e, arg) => ['ok', await e.pull.peek(arg)],
  pull_stats: (e) => ['ok', e.pull.stats()],
  purge_ready: (e) => ['ok', e.pull.purgeReady()],
  respawn: async (e, arg) => ['ok', await e.pull.respawn(arg)],
  dead_letter: (e, arg) => ['ok', e.pull.deadLetter(arg)],
  finish: async (e, arg) => ['ok', await e.pull.finish(arg)],
  result_wait: async (e, arg, conn) => ['ok', await e.pull.resultWait(arg, conn)],
  remove: async (e, arg) => ['ok', await e.pull.remove(arg)],
  list: (e, arg) => ['ok', e.pull.list(arg)],
};

/** The pull commands, and two the web maps to a status, answer a refusal with its stable code too. */
const CODED_COMMANDS = new Set([
  ...['publish', 'lease', 'cancel_wait', 'ack', 'nack', 'touch', 'set', 'peek', 'pull_stats', 'purge_ready', 'respawn', 'dead_letter', 'finish', 'result_wait', 'remove', 'list'],
  ...['run_message', 'clone_message'],
]);

/** Commands whose success proves a write worked (after a full disk, the log says the disk has room again). */
const WRITES = new Set(['create_message', 'prep_message', 'single_que', 'commit_message', 'clone_message', 'attach_message', 'publish', 'set']);

/** A refusal of `command`: `["fail", text]`, or `["fail", text, code]` for the coded commands and a full disk. */
function refusal(command: string, text: string, code: ErrorCode): unknown[] {
  return CODED_COMMANDS.has(command) || code === 'RQ_NO_SPACE' ? ['fail', text, code] : ['fail', text];
}

/**
 * Run one command and return its reply value. `argument` is the raw JSON text; a bad
 * one gets `["fail", reason]` instead of RQ's crash. Unknown commands get `[ "ERROR" ]`.
 */
export async function runCommand(engine: QueueEngine, log: Logger, command: string, argument: string, conn?: RpcConnection): Promise<unknown> {
  const handler = Object.hasOwn(COMMANDS, command) ? COMMANDS[command] : undefined;
  if (!handler) return ['ERROR'];
  if (engine.adminStatus() === 'DOWN' && !NO_DOWN_CHECK.has(command)) return refusal(command, 'status: DOWN', 'RQ_QUEUE_DOWN');
  let arg: Record<string, unknown> = {};
  if (argument.trim() !== '') {
    let parsed: unknown;
    try {
      parsed = JSON.parse(argument);
    } catch (e) {
      return refusal(command, `argument is not valid JSON: ${coerceError(e).message}`, 'RQ_BAD_REQUEST');
    }
    if (isTooDeep(parsed)) return refusal(command, `argument nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels`, 'RQ_BAD_REQUEST');
    if (!isPlainObject(parsed)) return refusal(command, `argument must be a JSON object, got ${JSON.stringify(parsed)}`, 'RQ_BAD_REQUEST');
    arg = parsed;
  } else if (!NO_DOWN_CHECK.has(command)) {
    return refusal(command, 'argument must be a JSON object, got nothing', 'RQ_BAD_REQUEST');
  }
  try {
    const reply = await handler(engine, arg, conn);
    if (WRITES.has(command)) engine.spaceAgain();
    return reply;
  } catch (e) {
    if (isNoSpace(e)) engine.noteNoSpace(e);
    if (e instanceof RqError) return refusal(command, e.message, e.code);
    log.error({ command, err: coerceError(e).stack }, 'command failed');
    return refusal(command, 'internal error', 'RQ_IO');
  }
}
