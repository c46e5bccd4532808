/**
 * Message lookups shared by the message and file routes: the id is checked against its
 * grammar before anything else (spec/rq.md §10.2), the queue is resolved through router
 * mode (§7.6), and a refusal is RQ's 404 `Message ID not found`; a queue process that
 * does not answer (RQ: a 404 too) is waited for while it restarts, then a 503. The
 * message directory comes from the queue's own answer (`get_message_status` path), never
 * from a path built out of the request.
 */
import path from 'node:path';
import { isOk } from '../client/rpc.js';
import { isSafeId, parseFullId } from '../domain/ids.js';
import type { State } from '../domain/states.js';
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
export async function findMessage(gw: Gateway, queue: string, id: string, timeoutMs?: number): Promise<MessageLocation | 'missing' | undefined> {
  return locationOf(gw, queue, id, await gw.queue(queue, 'get_message_status', { msg_id: id }, timeoutMs));
}

/** A `get_message_status` reply as findMessage answers. */
function locationOf(gw: Gateway, queue: string, id: string, reply: unknown): MessageLocation | 'missing' | undefined {
  if (!isOk(reply)) return Array.isArray(reply) && reply[1] === 'msg not found' ? 'missing' : undefined;
  const { path: rel, status, state } = reply[1] as { path: string; status: string; state: State };
  return { queue, id, state, status, dir: path.resolve(gw.root.root, rel) };
}

/** The message `raw` of queue `name` (routed), or a 404; a 503 when the queue process does not answer. */
export async function locateMessage(gw: Gateway, name: string, raw: string): Promise<MessageLocation> {
  gw.existing(name);
  const [queue, id] = [gw.routed(name), checkMsgId(raw)];
  const loc = locationOf(gw, queue, id, await gw.send(queue, 'get_message_status', { msg_id: id }, { repeatable: true }));
  if (typeof loc !== 'object') throw webError('RQ_NOT_FOUND', 'Message ID not found');
  return loc;
}

/** The checked short id and the read view of a message (§1.10) from `get_message`, or a 404; a 503 when the queue process does not answer. */
export async function messageView(gw: Gateway, name: string, raw: string): Promise<{ id: string; view: Record<string, unknown> }> {
  gw.existing(name);
  const id = checkMsgId(raw);
  const reply = await gw.send(gw.routed(name), 'get_message', { msg_id: id }, { repeatable: true });
  if (!isOk(reply)) throw webError('RQ_NOT_FOUND', 'Message ID not found');
  return { id, view: reply[1] as Record<string, unknown> };
}
