/**
 * `run_message`: move a waiting message to the front of que, due now
 * (or just before the first in run order). Precondition: the message is in que, under
 * its lock. On disk: its `msg` rewritten with the new `due` (a record in the journal).
 * Errors: RQ_BAD_REQUEST `lacking 'msg_id' field`; RQ's text `msg not in runnable state`
 * with RQ_NOT_FOUND (no such message) or RQ_NOT_IN_STATE (not in que), RQ_NOT_IN_STATE
 * `msg already running`. Reply: `["ok", "msg sent to front of run queue"]`.
 */
import { RqError } from '../../domain/errors.js';
import { entryFromMessage } from '../../store/que-index.js';
import { msgIdArg } from '../args.js';
import { command } from '../command.js';
import { stateOf } from '../lookup.js';
import { nowSec, type QueueState } from '../state.js';

async function moveToFront(s: QueueState, id: string): Promise<void> {
  const state = stateOf(s, id);
  if (state === 'run') throw new RqError('RQ_NOT_IN_STATE', 'msg already running');
  // RQ's text for a missing message too; the code tells the two apart (the web's 404 and 409).
  if (state === undefined) throw new RqError('RQ_NOT_FOUND', 'msg not in runnable state');
  if (state !== 'que') throw new RqError('RQ_NOT_IN_STATE', 'msg not in runnable state');
  const entry = s.que.get(id);
  const first = s.que.slice(0, 1)[0];
  if (!entry || !first) throw new RqError('RQ_NOT_FOUND', 'msg not found');
  // The first message in run order, due now or not: the moved one goes before it.
  const due = Math.min(nowSec(), Math.floor(first.dueMs / 1000) - 1);
  const msg = s.store.readMsg('que', id);
  msg.due = due;
  // Memory first: a checkpoint from now on writes the new due.
  s.que.insert(entryFromMessage(msg));
  await s.store.rewrite('que', id, { msg });
  s.nudge();
}

export const runMessage = command({
  arg: msgIdArg,
  run: async (s, { msg_id }): Promise<['ok', 'msg sent to front of run queue']> => {
    await s.locks.exclusive(msg_id, () => moveToFront(s, msg_id));
    return ['ok', 'msg sent to front of run queue'];
  },
});
