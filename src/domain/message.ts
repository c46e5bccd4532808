/**
 * The message JSON stored in `<state>/<id>/msg` (spec/rq.md §1.10), how a message is
 * built from client input, and the fields of its in-memory index entry.
 *
 * The JSON has no version field: readers keep unknown keys, and every field added
 * beyond RQ's is optional. Key order at creation is RQ's, because clients see it.
 */
import { RqError } from './errors.js';
import { rubyToF, rubyToI } from './ruby.js';

/** A stored message. Unknown keys are kept. */
export interface Message {
  msg_id: string;
  dest: unknown;
  orig_msg_id?: unknown;
  count: number;
  max_count: number;
  src?: unknown;
  param1?: unknown;
  param2?: unknown;
  param3?: unknown;
  param4?: unknown;
  post_run_webhook?: unknown;
  due?: unknown;
  force_remote?: unknown;
  cloned_from?: string;
  dups?: string[];
  dup?: string;
  [key: string]: unknown;
}

export const PARAM_KEYS = ['param1', 'param2', 'param3', 'param4'] as const;
const OPTIONAL_KEYS = ['src', ...PARAM_KEYS, 'post_run_webhook', 'due', 'force_remote'] as const;

export type MessageInput = Record<string, unknown>;

/** Every key a client may give when creating a message (§1.10); the queue drops others. */
export const INPUT_KEYS: ReadonlySet<string> = new Set(['dest', 'orig_msg_id', 'count', 'max_count', ...OPTIONAL_KEYS]);

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Build a new message from client input (§1.10, §2.2). `ownFullId` becomes
 * `orig_msg_id` unless the input carries one. `nowSec` defaults `due`.
 */
export function buildMessage(input: MessageInput, shortId: string, ownFullId: string, nowSec: number): Message {
  if (!('dest' in input)) throw new RqError('RQ_BAD_MESSAGE', 'input missing required "dest" parameter');
  const msg: Message = {
    msg_id: shortId,
    dest: input['dest'],
    orig_msg_id: input['orig_msg_id'] ?? ownFullId,
    count: 'count' in input ? rubyToI(input['count']) : 0,
    max_count: 'max_count' in input ? rubyToI(input['max_count']) : 15,
  };
  for (const key of OPTIONAL_KEYS) {
    if (key in input && !(key === 'due' && input[key] === null)) msg[key] = input[key];
  }
  if (msg.due === undefined) msg.due = nowSec;
  return msg;
}

/** A message's due time in epoch milliseconds (Ruby `to_f` of `due`, in seconds). */
export function dueMs(msg: Pick<Message, 'due'>): number {
  return rubyToF(msg.due) * 1000;
}

/** Parse a stored `msg` file. Throws RqError when it is not a JSON object with an id. */
export function parseMessage(text: string, where: string): Message {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (cause) {
    throw new RqError('RQ_BAD_MESSAGE', `${where}: msg is not JSON`, { cause });
  }
  if (!isPlainObject(value) || typeof value['msg_id'] !== 'string') {
    throw new RqError('RQ_BAD_MESSAGE', `${where}: msg is not a message object`);
  }
  return value as Message;
}
