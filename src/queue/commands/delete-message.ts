/**
 * `delete_message`: remove a message from prep, que, err, done or relayed (RQ looked for
 * done and relayed in the wrong, flat place and removed nothing), or a leased one from
 * run. A script's running message must be destroyed first: we say so instead of RQ's
 * "ok" that deleted nothing. Precondition: the message exists, under its lock. On disk:
 * its directory removed. Errors: RQ_BAD_REQUEST `lacking 'msg_id' field`, RQ_NOT_FOUND
 * `msg not found`, RQ_NOT_IN_STATE `msg is running - destroy it first`. Reply: `["ok",
 * "msg deleted"]`.
 */
import { RqError } from '../../domain/errors.js';
import { msgIdArg } from '../args.js';
import { command } from '../command.js';
import { find } from '../lookup.js';
import { forgetErr } from '../pull-messages.js';
import type { QueueState } from '../state.js';

/** Remove message `id` from wherever it is (the caller holds its lock). */
export async function deleteOne(s: QueueState, id: string): Promise<void> {
  const state = find(s, id);
  switch (state) {
    case 'run':
      if (!s.run.get(id)?.msg.lease) throw new RqError('RQ_NOT_IN_STATE', 'msg is running - destroy it first');
      // An external worker's lease has no process to stop.
      s.pull.leaseEnds.delete(id);
      s.run.delete(id);
      break;
    case 'prep':
      s.prep = s.prep.filter((p) => p !== id);
      break;
    case 'que':
      s.que.remove(id);
      if (s.heldIds.delete(id)) {
        for (const [parent, list] of s.held) s.held.set(parent, list.filter((e) => e.id !== id));
      }
      break;
    case 'err':
      forgetErr(s, id);
      break;
    case 'done':
    case 'relayed':
      s.counts[state]--;
      break;
  }
  await s.store.remove(state, id);
  s.log.info({ msg_id: id, state }, 'message deleted');
}

export const deleteMessage = command({
  arg: msgIdArg,
  run: async (s, { msg_id }): Promise<['ok', 'msg deleted']> => {
    await s.locks.exclusive(msg_id, async () => deleteOne(s, msg_id));
    return ['ok', 'msg deleted'];
  },
});
