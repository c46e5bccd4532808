/**
 * Runs one RPC command of the queue process (the table is commands/index.ts) and renders
 * its reply: the admin DOWN check (the value last read, which the flag files' watch,
 * hints.ts, keeps current: inotify queues the event as the file is made, and the queue's
 * event loop handles it no later than the accept of a connection made afterwards, before
 * reading its request), the JSON argument (nested at most MAX_JSON_DEPTH deep, an object),
 * the pull-queue check of the pull commands, the argument's schema, the handler.
 *
 * Every refusal is `["fail", text, code]`: RQ's text and the error's stable code, which
 * RQ's two-element readers ignore; `delete_attach_message` answers RQ's attachment
 * refusals `[false, text]` itself. A full disk (`RQ_NO_SPACE`: `no space left on device:
 * queues/<q>`) also tells dispatch that the disk is full. Unknown commands get
 * `["ERROR"]`.
 */
import { RqError, coerceError, isNoSpace, type ErrorCode } from '../domain/errors.js';
import { MAX_JSON_DEPTH, isTooDeep } from '../domain/json-depth.js';
import { isPlainObject } from '../domain/message.js';
import type { ArgOf, QueueCommand, ReplyOf } from '../rpc/queue-api.js';
import type { RpcConnection } from '../rpc/server.js';
import { parseArg } from './args.js';
import type { Command, Fail } from './command.js';
import { COMMANDS } from './commands/index.js';
import { noteNoSpace, spaceAgain } from './finish-run.js';
import { needPull } from './pull-messages.js';
import type { QueueState } from './state.js';

const fail = (text: string, code: ErrorCode): Fail => ['fail', text, code];

/** The JSON argument of a command, or why it is refused. */
function parseArgument(argument: string, whileDown: boolean): Record<string, unknown> | Fail {
  if (argument.trim() === '') return whileDown ? {} : fail('argument must be a JSON object, got nothing', 'RQ_BAD_REQUEST');
  let parsed: unknown;
  try {
    parsed = JSON.parse(argument);
  } catch (e) {
    return fail(`argument is not valid JSON: ${coerceError(e).message}`, 'RQ_BAD_REQUEST');
  }
  if (isTooDeep(parsed)) return fail(`argument nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels`, 'RQ_BAD_REQUEST');
  if (!isPlainObject(parsed)) return fail(`argument must be a JSON object, got ${JSON.stringify(parsed)}`, 'RQ_BAD_REQUEST');
  return parsed;
}

/** The argument of command `c`, from its JSON text, checked; or the refusal. */
export function checkedArg<A, R>(c: Command<A, R>, argument: string): A | Fail {
  const arg = parseArgument(argument, c.whileDown === true);
  if (Array.isArray(arg)) return arg;
  try {
    return parseArg(c.arg, arg);
  } catch (e) {
    return e instanceof RqError ? fail(e.message, e.code) : fail('internal error', 'RQ_IO');
  }
}

/** Run a command with its checked argument. */
async function run<A, R>(s: QueueState, c: Command<A, R>, arg: Record<string, unknown>, conn: RpcConnection | undefined): Promise<R> {
  if (c.needsPull) needPull(s);
  return c.run(s, parseArg(c.arg, arg), conn);
}

/**
 * Run a command of this queue in-process, as a client of the map would over the socket
 * (a `dup` or a webhook to the queue itself): its reply, refusals included.
 */
export async function runOwnCommand<K extends QueueCommand>(s: QueueState, command: K, arg: ArgOf<K>): Promise<ReplyOf<K>> {
  // The table serves the map (commands/index.ts checks every handler's reply against it).
  return (await runCommand(s, command, JSON.stringify(arg))) as ReplyOf<K>;
}

/**
 * Run one command and return its reply value. `argument` is the raw JSON text; a bad
 * one gets a `fail` instead of RQ's crash.
 */
export async function runCommand(s: QueueState, command: string, argument: string, conn?: RpcConnection): Promise<unknown> {
  const c: Command<unknown, unknown> | undefined = Object.hasOwn(COMMANDS, command) ? COMMANDS[command as keyof typeof COMMANDS] : undefined;
  if (!c) return ['ERROR'];
  const whileDown = c.whileDown === true;
  if (s.admin === 'DOWN' && !whileDown) return fail('status: DOWN', 'RQ_QUEUE_DOWN');
  const arg = parseArgument(argument, whileDown);
  if (Array.isArray(arg)) return arg;
  try {
    const reply = await run(s, c, arg, conn);
    if (c.writes) spaceAgain(s);
    return reply;
  } catch (e) {
    if (isNoSpace(e)) noteNoSpace(s, e);
    if (e instanceof RqError) return fail(e.message, e.code);
    s.log.error({ command, err: coerceError(e).stack }, 'command failed');
    return fail('internal error', 'RQ_IO');
  }
}
