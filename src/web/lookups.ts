/**
 * Message lookups shared by the message and file routes: the id is checked against its
 * grammar before anything else (ids.ts), the queue is resolved through router
 * mode (docs/router.md), and a refusal is RQ's 404 `Message ID not found`; a queue process that
 * does not answer (RQ: a 404 too) is waited for while it restarts, then a 503. The
 * message directory comes from the queue's own answer (`get_message_status` path), never
 * from a path built out of the request.
 */
import path from 'node:path';
import { Refused, isRefusal, refusalCode } from '../client/refusal.js';
import { isSafeId, parseFullId } from '../domain/ids.js';
import type { State } from '../domain/states.js';
import type { MessageStatus, MessageView } from '../rpc/queue-api.js';
import type { Gateway } from './gateway.js';
import { webError } from './web-errors.js';

export interface MessageLocation {
  /** The queue that answered (the routed one). */
  queue: string;
  id: string;
  state: State;
  status: string;
  /** Absolute directory of the message. */
  dir: string;
}

/** A `:msg_id` path parameter (short id, or full id) as a short id; 404 if it is not one. */
export function checkMsgId(raw: string): string {
  const id = parseFullId(raw).shortId;
  if (!isSafeId(id)) throw webError('RQ_NOT_FOUND', 'Message ID not found');
  return id;
}

/**
 * A file name directly inside `job/` or `attach/`: no separators, no dot-files, no NUL,
 * and at most 255 bytes (no file has a longer name; the filesystem would fail with ENAMETOOLONG).
 */
export function checkFileName(name: string, what: string): string {
  if (name === '' || name.startsWith('.') || /[/\\\0]/.test(name)) throw webError('RQ_NOT_FOUND', `${what} '${name}' not found`);
  if (Buffer.byteLength(name) > 255) throw webError('RQ_NOT_FOUND', `${what} not found: its name is over 255 bytes`);
  return name;
}

/**
 * Where message `id` of queue `queue` (already routed) is now, from the queue's
 * `get_message_status`: `missing` when the queue does not know it, undefined when the
 * queue did not answer or refused to (e.g. `status: DOWN`).
 */
export async function findMessage(gw: Gateway, queue: string, id: string, timeoutMs = 10_000): Promise<MessageLocation | 'missing' | undefined> {
  const reply = await gw.queues.probe(queue, 'get_message_status', { msg_id: id }, timeoutMs);
  if (reply === undefined) return undefined;
  if (isRefusal(reply)) return refusalCode(reply) === 'RQ_NOT_FOUND' ? 'missing' : undefined;
  return locationOf(gw, queue, id, reply[1]);
}

function locationOf(gw: Gateway, queue: string, id: string, { path: rel, status, state }: MessageStatus): MessageLocation {
  return { queue, id, state, status, dir: path.resolve(gw.root.root, rel) };
}

/** The refusal of a message lookup as RQ's 404; anything else (a 503: the queue process does not answer) as it is. */
function notFound(e: unknown): never {
  throw e instanceof Refused ? webError('RQ_NOT_FOUND', 'Message ID not found') : e;
}

/** The message `raw` of queue `name` (routed), or a 404; a 503 when the queue process does not answer. */
export async function locateMessage(gw: Gateway, name: string, raw: string): Promise<MessageLocation> {
  gw.existing(name);
  const [queue, id] = [gw.routed(name), checkMsgId(raw)];
  return locationOf(gw, queue, id, await gw.queues.getMessageStatus(queue, id).catch(notFound));
}

/** The checked short id and the read view of a message from `get_message`, or a 404; a 503 when the queue process does not answer. */
export async function messageView(gw: Gateway, name: string, raw: string): Promise<{ id: string; view: MessageView }> {
  gw.existing(name);
  const id = checkMsgId(raw);
  return { id, view: await gw.queues.getMessage(gw.routed(name), id).catch(notFound) };
}
