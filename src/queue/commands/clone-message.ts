/**
 * `clone_message` (spec/rq.md §2.11): a new message from a finished one (err, relayed or
 * done), its attachments hard-linked in, committed to que. Precondition: the source is
 * finished, under its lock while the clone is made. On disk: `prep/<new id>` made with
 * `msg` (`cloned_from`) and `attach/`, in one durable commit, then committed to que.
 * Errors: RQ_BAD_REQUEST `lacking 'msg_id' field`, RQ_NOT_FOUND `msg not found` (or
 * removed while it was being cloned), RQ_NOT_IN_STATE `cannot clone message in <state>
 * state`, RQ_NO_SPACE. Reply: `["ok", <full id of the clone>]`.
 */
import { RqError, errnoCode } from '../../domain/errors.js';
import { PARAM_KEYS, buildMessage, type MessageInput } from '../../domain/message.js';
import { msgIdArg } from '../args.js';
import { command } from '../command.js';
import { commitMessage, makeMessage } from '../create.js';
import { find } from '../lookup.js';
import { fullIdOf, nowSec, type QueueState } from '../state.js';

/** The clone of message `id`, made in prep with its attachments; returns its id. */
async function prepClone(s: QueueState, id: string): Promise<string> {
  const state = find(s, id);
  if (state !== 'err' && state !== 'relayed' && state !== 'done') {
    throw new RqError('RQ_NOT_IN_STATE', `cannot clone message in ${state} state`);
  }
  const old = s.store.readMsg(state, id);
  const input: MessageInput = { dest: old.dest, orig_msg_id: old.orig_msg_id, max_count: old.max_count, count: 0 };
  for (const k of ['src', ...PARAM_KEYS, 'post_run_webhook', 'due', 'force_remote'] as const) {
    if (k in old) input[k] = old[k];
  }
  // Listed while the source is surely there; a clean or a delete may take it during the create.
  const names = s.store.attachmentNames(state, id);
  try {
    const msg = await makeMessage(
      s,
      (newId) => {
        const m = buildMessage(input, newId, fullIdOf(s, newId), nowSec());
        m.cloned_from = id;
        return m;
      },
      'prep',
      { linkFrom: { state, id, names } },
    );
    return msg.msg_id;
  } catch (e) {
    // No clone without all its attachments: nothing was made.
    if (errnoCode(e) !== 'ENOENT') throw e;
    throw new RqError('RQ_NOT_FOUND', `msg ${id} was removed while it was being cloned; no clone was made`, { cause: e });
  }
}

export const cloneMessage = command({
  writes: true,
  arg: msgIdArg,
  run: async (s, { msg_id }): Promise<['ok', string]> => {
    const cloneId = await s.locks.exclusive(msg_id, () => prepClone(s, msg_id));
    await commitMessage(s, cloneId);
    return ['ok', fullIdOf(s, cloneId)];
  },
});
