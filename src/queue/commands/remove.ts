/**
 * `remove` (pull model, Workq delete): a message gone for good, in any state; its
 * external id is free. Precondition: a pull queue; the message exists within its TTL,
 * under its lock. On disk: renamed into the queue's trash, deleted soon after. Errors:
 * RQ_NOT_PULL, RQ_BAD_REQUEST naming the field, RQ_NOT_FOUND `msg not found`. Reply:
 * `["ok", {id}]`.
 */
import { RqError } from '../../domain/errors.js';
import { args, ref } from '../args.js';
import { command } from '../command.js';
import { stateOf } from '../lookup.js';
import { discard, isRemovable, live, resolveRef } from '../pull-messages.js';

export const remove = command({
  needsPull: true,
  arg: args({ ref: ref() }),
  run: (s, a): Promise<['ok', { id: string }]> => {
    const id = resolveRef(s, a.ref);
    return s.locks.exclusive(id, async () => {
      const state = stateOf(s, id);
      live(s, state, id);
      if (!isRemovable(state) || !discard(s, state, id)) throw new RqError('RQ_NOT_FOUND', 'msg not found');
      return ['ok', { id }];
    });
  },
});
