/**
 * The message JSON stored in `<state>/<id>/msg` (docs/layout.md), how a message is
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
  // Pull messages (queue/pull.ts), all optional:
  /** Unique in the queue while not done (lmstfy job id, RQMS item id), or across the server (`ext_scope`). */
  ext_id?: string;
  /** `server`: the external id is unique across every queue and held until the message is removed (Workq). */
  ext_scope?: 'server';
  /** Higher leases first. */
  priority?: number;
  /** The place among ready messages instead of the due time (epoch ms). */
  rank?: number;
  /** The tie-break after rank instead of the id. */
  sort_key?: string;
  /** Removed at this instant (epoch ms) unless done or dead (with `ttl_final`, in every state). */
  expires_at?: number;
  /** The TTL holds in done and err too: the result lives until it (Workq). */
  ttl_final?: boolean;
  /** The TTL as the client gave it, in ms (a decimal string: it may exceed 2^53). */
  ttl?: string;
  /** A lease that names no TTR lasts this long (ms). */
  ttr_ms?: number;
  /** Explicit failures so far, and how many a failure may be retried before it is final (0: never). */
  fails?: number;
  max_fails?: number;
  /** The outcome of a finished message (its result is `attach/result`). */
  success?: boolean;
  /** Workq's max-attempts as the client gave it (0: unlimited, which `max_count` 255 enforces), for display. */
  max_attempts?: number;
  /** When a scheduled message was due (epoch ms), for display. */
  scheduled_at?: number;
  /** Removed once its result is read (a Workq `run` job). */
  ephemeral?: boolean;
  /** Deliveries left. */
  tries?: number;
  /** Raised by every write. */
  rev?: number;
  /** Where a TTR expiry puts it back: `tail` or `place`. */
  requeue?: 'tail' | 'place';
  /** An external worker's lease, while in run. */
  lease?: Lease;
  /** In err as a dead letter, since `dead_at` (epoch ms). */
  dead?: boolean;
  dead_at?: number;
  /** Name → value pairs a front door keeps with the message and shows back (lmstfy's job attributes); see ATTRIBUTE_LIMITS. */
  attributes?: Record<string, string>;
  [key: string]: unknown;
}

export interface Lease {
  owner: string;
  /** Epoch ms. */
  at: number;
  /** Epoch ms; null = no expiry. */
  until: number | null;
}

/**
 * The limits of a message's `attributes`, in UTF-8 bytes: they travel in HTTP headers and
 * in every reply that shows the message, so they stay small.
 */
export const ATTRIBUTE_LIMITS = {
  /** Attributes on one message. */
  count: 32,
  /** One name (at least 1). */
  nameBytes: 64,
  /** One value (it may be empty). */
  valueBytes: 1024,
} as const;

/** The first way `attributes` break ATTRIBUTE_LIMITS, as one line, or undefined when they fit. */
export function attributesProblem(attributes: Readonly<Record<string, string>>): string | undefined {
  const names = Object.keys(attributes);
  if (names.length > ATTRIBUTE_LIMITS.count) return `too many attributes: ${names.length} (at most ${ATTRIBUTE_LIMITS.count})`;
  for (const name of names) {
    const nameBytes = Buffer.byteLength(name);
    if (nameBytes === 0) return 'an attribute name is empty';
    // A JavaScript object's key `__proto__` is easily lost on the way (`obj[name] = value` drops it).
    if (name === '__proto__') return 'the attribute name "__proto__" is reserved';
    if (nameBytes > ATTRIBUTE_LIMITS.nameBytes) return `attribute name too long: ${nameBytes} bytes (at most ${ATTRIBUTE_LIMITS.nameBytes})`;
    const valueBytes = Buffer.byteLength(attributes[name]!);
    if (valueBytes > ATTRIBUTE_LIMITS.valueBytes) return `attribute ${JSON.stringify(name)} too long: ${valueBytes} bytes (at most ${ATTRIBUTE_LIMITS.valueBytes})`;
  }
  return undefined;
}

/** A stored message's attributes (the pairs whose value is a string: a hand-edited msg may hold others), or null when it has none. */
export function attributesOf(msg: Message): Record<string, string> | null {
  if (!isPlainObject(msg.attributes)) return null;
  const pairs = Object.entries(msg.attributes).filter((pair): pair is [string, string] => typeof pair[1] === 'string');
  return pairs.length === 0 ? null : Object.fromEntries(pairs);
}

export const PARAM_KEYS = ['param1', 'param2', 'param3', 'param4'] as const;
const OPTIONAL_KEYS = ['src', ...PARAM_KEYS, 'post_run_webhook', 'due', 'force_remote'] as const;

export type MessageInput = Record<string, unknown>;

/** Every key a client may give when creating a message; the queue drops others. */
export const INPUT_KEYS: ReadonlySet<string> = new Set(['dest', 'orig_msg_id', 'count', 'max_count', ...OPTIONAL_KEYS]);

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `value` as an absolute http or https URL, or undefined when it is not one. */
export function httpUrl(value: unknown): URL | undefined {
  if (typeof value !== 'string') return undefined;
  try {
    const url = new URL(value);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url : undefined;
  } catch {
    return undefined;
  }
}

/**
 * `post_run_webhook` must be null or an array of http(s) URLs. RQ stored anything and
 * fired only for an array, so a string URL was silently never called; rq refuses
 * it when the message is created, where the client can still see why.
 */
function checkPostRunWebhook(value: unknown): void {
  if (value === null || value === undefined || (Array.isArray(value) && value.every((url) => httpUrl(url) !== undefined))) return;
  throw new RqError('RQ_BAD_MESSAGE', `Expected "post_run_webhook" to be an array of http or https URLs, got ${JSON.stringify(value)}`);
}

/**
 * Build a new message from client input. `ownFullId` becomes
 * `orig_msg_id` unless the input carries one. `nowSec` defaults `due`. A
 * `post_run_webhook` that is present must be null or an array of http(s) URLs
 * (RQ_BAD_MESSAGE naming the field otherwise).
 */
export function buildMessage(input: MessageInput, shortId: string, ownFullId: string, nowSec: number): Message {
  if (!('dest' in input)) throw new RqError('RQ_BAD_MESSAGE', 'input missing required "dest" parameter');
  if ('post_run_webhook' in input) checkPostRunWebhook(input['post_run_webhook']);
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

/** A field as the `RQ_*` variables carry it: a string as it is, absent or null as '', anything else as its JSON. */
export function fieldText(value: unknown): string {
  return value === undefined || value === null ? '' : typeof value === 'string' ? value : JSON.stringify(value);
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
