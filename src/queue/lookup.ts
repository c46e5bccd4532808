/**
 * Lookups of one message: where it is (RQ's lookup order: prep, que, run, done, relayed,
 * err), its status text and its read view, as `get_message`, `get_message_state` and
 * `get_message_status` answer them. prep and run are known from memory, the other states
 * from their directories. A lookup waits until no command is changing the message (its
 * lock, message-locks.ts) and reads in that same turn.
 */
import path from 'node:path';
import { RqError, errnoCode } from '../domain/errors.js';
import { isSafeId, isShortId } from '../domain/ids.js';
import type { Message } from '../domain/message.js';
import { TRANSITIONS, type State } from '../domain/states.js';
import type { QueueState } from './state.js';

export interface MessageView extends Message {
  path: string;
  state: State;
  status: string;
  _attachments?: Record<string, { md5: string; size: number; path: string }>;
}

/** Where a message is (RQ's lookup order), or undefined. */
export function stateOf(s: QueueState, id: string): State | undefined {
  if (!isSafeId(id)) return undefined;
  const { store } = s;
  if (s.prep.includes(id)) return 'prep';
  if (store.exists('que', id)) return 'que';
  if (s.run.has(id)) return 'run';
  // A hashed lookup needs the id pattern: its path is derived from it (done/YYYYMMDD/HH/MM/<id>).
  if (isShortId(id) && store.exists('done', id)) return 'done';
  if (isShortId(id) && store.exists('relayed', id)) return 'relayed';
  if (store.exists('err', id)) return 'err';
  return undefined;
}

/**
 * Like `stateOf`, and the directory must exist (every command but state/status). Only
 * prep and run are known from memory; stateOf found the others on disk.
 */
export function find(s: QueueState, id: string): State {
  const state = stateOf(s, id);
  if (state === undefined || ((state === 'prep' || state === 'run') && !s.store.exists(state, id))) {
    throw new RqError('RQ_NOT_FOUND', 'msg not found');
  }
  return state;
}

/** Where a message is once no command is changing it. */
export async function stateNow(s: QueueState, id: string): Promise<State | undefined> {
  await s.locks.settled(id);
  return stateOf(s, id);
}

/** The status text: a run's last line from memory when it wrote one, else the status file. */
export function statusText(s: QueueState, state: State, id: string): string {
  const run = state === 'run' ? s.run.get(id) : undefined;
  const st = run?.hasStatus ? { job_status: run.jobStatus } : s.store.readStatus(state, id);
  return st === undefined ? state : `${state} - ${st.job_status ?? ''}`;
}

/** The read view without attachments: the stored message, its path, state and status text. */
export function viewOf(s: QueueState, state: State, id: string, msg: Message, status: string): MessageView {
  return { ...msg, path: s.layout.displayPath(state, id), status, state };
}

/**
 * A listed message's `msg`, and the state it was read in: `state`, or one legal move on
 * when its directory is gone from there. A move renames before its group commit's
 * directory fsync ends, and memory follows only then, so for those milliseconds memory
 * still lists the message where it was (a cron message being committed is in memory's
 * prep and on disk in que; a finished run is in memory's run and on disk in done).
 * Throws when it is in neither (deleted, or unreadable).
 */
export function readMoving(s: QueueState, state: State, id: string): [State, Message] {
  try {
    return [state, s.store.readMsg(state, id)];
  } catch (e) {
    if (s.store.exists(state, id)) throw e;
    const to = TRANSITIONS[state].find((st) => s.store.exists(st, id));
    if (to === undefined) throw e;
    return [to, s.store.readMsg(to, id)];
  }
}

/**
 * The read view with `_attachments`, once no command is changing the message. Everything
 * but the attachments' md5 is read in that turn; a message moved on while they were
 * hashed is read again where it went.
 */
export async function messageView(s: QueueState, id: string): Promise<MessageView> {
  for (let attempt = 1; ; attempt++) {
    await s.locks.settled(id);
    try {
      return await readView(s, id);
    } catch (e) {
      if (attempt >= 3 || errnoCode(e) !== 'ENOENT') throw e;
    }
  }
}

async function readView(s: QueueState, id: string): Promise<MessageView> {
  const state = find(s, id);
  let view: MessageView;
  try {
    view = viewOf(s, state, id, s.store.readMsg(state, id), statusText(s, state, id));
  } catch (e) {
    throw new RqError('RQ_BAD_MESSAGE', "msg couldn't be read", { cause: e });
  }
  const names = s.store.attachmentNames(state, id);
  if (names.length > 0) {
    const attachments: NonNullable<MessageView['_attachments']> = {};
    for (const name of names) {
      attachments[name] = { ...(await s.store.hashAttachment(state, id, name)), path: path.join(s.layout.publicPath(state, id), 'attach', name) };
    }
    view._attachments = attachments;
  }
  return view;
}

/** A message's status, once no command is changing it. */
export async function messageStatus(s: QueueState, id: string): Promise<{ path: string; status: string; state: State }> {
  const state = await stateNow(s, id);
  if (state === undefined) throw new RqError('RQ_NOT_FOUND', 'msg not found');
  return { path: s.layout.displayPath(state, id), status: statusText(s, state, id), state };
}
