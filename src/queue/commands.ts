/**
 * The queue process's RPC command table (spec/rq.md §5.2): parse the argument, call the
 * engine's verb, render RQ's exact reply. This is the RPC front door's one mapping from
 * RqError to RQ's vocabulary: `["fail", <the error's RQ text>]`, except the attachment
 * deletions, which RQ answers with `[false, text]`.
 */
import { RqError, coerceError } from '../domain/errors.js';
import { parseFullId } from '../domain/ids.js';
import { isPlainObject } from '../domain/message.js';
import { isState } from '../domain/states.js';
import type { Logger } from '../lib/logger.js';
import type { QueueEngine } from './queue-engine.js';

type Handler = (engine: QueueEngine, arg: Record<string, unknown>) => unknown;

/** Commands that answer even while the queue is admin DOWN. */
const NO_DOWN_CHECK = new Set(['ping', 'uptime', 'config', 'status', 'shutdown', 'num_messages', 'messages']);

/** The short id of `msg_id`; a full id (message URL) is split with RQ's pattern. */
function msgId(arg: Record<string, unknown>): string {
  if (!('msg_id' in arg)) throw new RqError('RQ_BAD_REQUEST', "lacking 'msg_id' field");
  return parseFullId(String(arg['msg_id'])).shortId;
}

const COMMANDS: Record<string, Handler> = {
  ping: () => ['pong'],
  uptime: (e) => [e.uptimeSec()],
  status: (e) => [e.status()],
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
    const limit = typeof arg['limit'] === 'number' && arg['limit'] >= 0 ? arg['limit'] : Infinity;
    return e.messages(state, limit);
  },
  create_message: async (e, arg) => ['ok', await e.create(arg, 'que')],
  prep_message: async (e, arg) => ['ok', await e.create(arg, 'prep')],
  single_que: async (e, arg) => ['ok', await e.singleQue(arg)],
  commit_message: async (e, arg) => {
    await e.commit(msgId(arg));
    return ['ok', 'msg commited'];
  },
  attach_message: async (e, arg) => ['ok', `${await e.attach(msgId(arg), arg['pathname'], arg['name'])}-Attached successfully`],
  delete_attach_message: (e, arg) => {
    try {
      e.deleteAttachment(msgId(arg), arg['attachment_name']);
    } catch (err) {
      if (err instanceof RqError && err.code === 'RQ_ATTACH') return [false, err.message];
      throw err;
    }
    return ['ok', 'Attachment deleted successfully'];
  },
  get_message: async (e, arg) => ['ok', await e.getMessage(msgId(arg))],
  get_message_state: (e, arg) => {
    const state = e.stateOf(msgId(arg));
    return state === undefined ? ['fail', 'msg not found'] : ['ok', state];
  },
  get_message_status: (e, arg) => ['ok', e.getStatus(msgId(arg))],
  delete_message: (e, arg) => {
    e.deleteMessage(msgId(arg));
    return ['ok', 'msg deleted'];
  },
  destroy_message: (e, arg) => {
    e.destroy(msgId(arg));
    return ['ok', 'msg destroyed'];
  },
  run_message: async (e, arg) => {
    await e.runNow(msgId(arg));
    return ['ok', 'msg sent to front of run queue'];
  },
  clone_message: async (e, arg) => ['ok', await e.clone(msgId(arg))],
};

/**
 * Run one command and return its reply value. `argument` is the raw JSON text; a bad
 * one gets `["fail", reason]` instead of RQ's crash. Unknown commands get `[ "ERROR" ]`.
 */
export async function runCommand(engine: QueueEngine, log: Logger, command: string, argument: string): Promise<unknown> {
  const handler = Object.hasOwn(COMMANDS, command) ? COMMANDS[command] : undefined;
  if (!handler) return ['ERROR'];
  engine.refreshFlags();
  if (engine.isDown() && !NO_DOWN_CHECK.has(command)) return ['fail', 'status: DOWN'];
  let arg: Record<string, unknown> = {};
  if (argument.trim() !== '') {
    let parsed: unknown;
    try {
      parsed = JSON.parse(argument);
    } catch (e) {
      return ['fail', `argument is not valid JSON: ${coerceError(e).message}`];
    }
    if (!isPlainObject(parsed)) return ['fail', `argument must be a JSON object, got ${JSON.stringify(parsed)}`];
    arg = parsed;
  } else if (!NO_DOWN_CHECK.has(command)) {
    return ['fail', 'argument must be a JSON object, got nothing'];
  }
  try {
    return await handler(engine, arg);
  } catch (e) {
    if (e instanceof RqError) return ['fail', e.message];
    log.error({ command, err: coerceError(e).stack }, 'command failed');
    return ['fail', 'internal error'];
  }
}
