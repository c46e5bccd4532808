/**
 * Making messages: a new message straight into `que` or into `prep`, and
 * the commit of a prep message into `que`. The create commands, cron, the pull model's
 * publish and clone all make their messages here, so each is counted and listed once.
 */
import { RqError, coerceError, isNoSpace } from '../domain/errors.js';
import { isSafeId } from '../domain/ids.js';
import { buildMessage, type Message, type MessageInput } from '../domain/message.js';
import type { Allocated, CreateOptions } from '../store/message-store.js';
import type { QueEntry } from '../store/que-index.js';
import { queued } from './que-memory.js';
import { fullIdOf, nowSec, type QueueState } from './state.js';

/** Make a message (`build` from its new id) in `to` with the store's options; counted, and listed in prep or que. */
export async function makeMessage(s: QueueState, build: (shortId: string) => Message, to: 'que' | 'prep', opts: CreateOptions = {}): Promise<Message> {
  const { msg, entry } = await s.store.create(build, to, opts);
  s.stats.messageCreated();
  if (entry) queued(s, entry);
  else s.prep.push(msg.msg_id);
  return msg;
}

/** create_message / prep_message; `allocated` is told the new id before the commit. Returns the full id. */
export async function createMessage(s: QueueState, input: MessageInput, to: 'que' | 'prep', allocated?: Allocated): Promise<string> {
  if (!('dest' in input)) throw new RqError('RQ_BAD_MESSAGE', 'input missing required "dest" parameter');
  const msg = await makeMessage(s, (id) => buildMessage(input, id, fullIdOf(s, id), nowSec()), to, allocated ? { allocated } : {});
  return fullIdOf(s, msg.msg_id);
}

/** commit_message (prep → que), under the message's lock. */
export async function commitMessage(s: QueueState, id: string): Promise<void> {
  if (!isSafeId(id)) throw new RqError('RQ_NOT_IN_STATE', 'cannot find message');
  return s.locks.exclusive(id, async () => {
    if (!s.prep.includes(id) || !s.store.exists('prep', id)) {
      throw new RqError('RQ_NOT_IN_STATE', 'cannot find message');
    }
    let entry: QueEntry;
    try {
      entry = await s.store.enqueue(id, 'prep', { msg: s.store.readMsg('prep', id) });
    } catch (e) {
      if (isNoSpace(e)) throw e;
      s.log.error({ msg_id: id, err: coerceError(e).message }, 'commit failed');
      throw new RqError('RQ_IO', 'unknown reason', { cause: e });
    }
    s.prep = s.prep.filter((p) => p !== id);
    queued(s, entry);
  });
}
