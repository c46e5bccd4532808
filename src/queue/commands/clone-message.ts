/**
 * `clone_message`: a new message from a finished one (err, relayed or
 * done), its attachments hard-linked in, committed to que. Precondition: the source is
 * finished, under its lock while the clone is made. On disk: `prep/<new id>` made with
 * `msg` (`cloned_from`) and `attach/`, in one durable commit, then committed to que.
 * Errors: RQ_BAD_REQUEST `lacking 'msg_id' field`, RQ_NOT_FOUND `msg not found` (or
 * removed while it was being cloned), RQ_NOT_IN_STATE `cannot clone message in <state>
 * state`, RQ_NO_SPACE. Reply: `["ok", <full id of the clone>]`.
 */
import { RqError, errnoCode } from '../../domain/errors.js';
import { PARAM_KEYS, buildMessage, type Message, type MessageInput } from '../../domain/message.js';
import type { State } from '../../domain/states.js';
import { attachmentNames } from '../../store/attachments.js';
import { msgIdArg } from '../args.js';
import { command } from '../command.js';
import { commitMessage, makeMessage } from '../create.js';
import { find } from '../lookup.js';
import { fullIdOf, nowSec, type QueueState } from '../state.js';

/**
 * A new message made from `source` (a finished message's `msg`, read from `dir`, of this
 * queue or another), in `to`: the fields a clone keeps, count 0, its attachments
 * hard-linked in, and `origin` (`cloned_from`, `moved_from`, a new `dest`) over them.
 * Returns its short id. The source must not change meanwhile (its lock, or its queue's).
 */
export async function copyMessage(s: QueueState, dir: string, source: Message, to: 'prep' | 'que', origin: Partial<Message>, what = 'copied; no copy'): Promise<string> {
  const input: MessageInput = { dest: source.dest, orig_msg_id: source.orig_msg_id, max_count: source.max_count, count: 0 };
  for (const k of ['src', ...PARAM_KEYS, 'post_run_webhook', 'due', 'force_remote'] as const) {
    if (k in source) input[k] = source[k];
  }
  // Listed while the source is surely there; a clean or a delete may take it during the create.
  const names = attachmentNames(dir);
  try {
    const msg = await makeMessage(s, (newId) => ({ ...buildMessage(input, newId, fullIdOf(s, newId), nowSec()), ...origin }), to, { linkFrom: { dir, names } });
    return msg.msg_id;
  } catch (e) {
    // No copy without all its attachments: nothing was made.
    if (errnoCode(e) !== 'ENOENT') throw e;
    throw new RqError('RQ_NOT_FOUND', `msg ${source.msg_id} was removed while it was being ${what} was made`, { cause: e });
  }
}

/** The states a message can be cloned from. */
export const CLONABLE: readonly State[] = ['err', 'relayed', 'done'];

/** The clone of message `id`, made in `to` with its attachments; returns its id. */
export function cloneOf(s: QueueState, id: string, to: 'prep' | 'que'): Promise<string> {
  const state = find(s, id);
  if (!CLONABLE.includes(state)) throw new RqError('RQ_NOT_IN_STATE', `cannot clone message in ${state} state`);
  return copyMessage(s, s.layout.msgDir(state, id), s.store.readMsg(state, id), to, { cloned_from: id }, 'cloned; no clone');
}

export const cloneMessage = command({
  writes: true,
  arg: msgIdArg,
  run: async (s, { msg_id }): Promise<['ok', string]> => {
    const cloneId = await s.locks.exclusive(msg_id, () => cloneOf(s, msg_id, 'prep'));
    await commitMessage(s, cloneId);
    return ['ok', fullIdOf(s, cloneId)];
  },
});
