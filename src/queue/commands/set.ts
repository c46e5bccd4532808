/**
 * `set` (pull model, RQMS PUT): upsert by external id. A message holding `ext_id` (in
 * que, run or err) gets the given fields, its payload replaced, rev + 1, its lease and
 * dead-letter marks dropped, and goes back to que; none: a new message, as `publish`
 * makes it. Precondition: a pull queue; the message under its lock. On disk: renamed into
 * que (or rewritten there) with `msg` and `attach/payload`, one durable commit. Errors:
 * RQ_NOT_PULL, RQ_BAD_REQUEST `lacking 'ext_id' field` and naming the field, RQ_IO
 * `cannot set <ext id>: it keeps changing`, RQ_NO_SPACE. Reply: `["ok", {id, created}]`.
 */
import { RqError } from '../../domain/errors.js';
import { command } from '../command.js';
import { stateOf } from '../lookup.js';
import { current, findExt, requeue } from '../pull-messages.js';
import { applyFields, createPullMessage, publishArg } from '../pull-publish.js';
import { PAYLOAD } from '../pull-view.js';

export const set = command({
  writes: true,
  needsPull: true,
  arg: publishArg,
  run: async (s, f): Promise<['ok', { id: string; created: boolean }]> => {
    const extId = f.ext_id;
    if (extId === undefined) throw new RqError('RQ_BAD_REQUEST', "lacking 'ext_id' field");
    for (let attempt = 0; attempt < 3; attempt++) {
      const id = findExt(s, extId);
      // Made by a publish or set that has not committed yet: set it once it has.
      if (id !== undefined) await s.pull.creating.get(id);
      if (id === undefined) {
        try {
          const msg = await createPullMessage(s, f);
          return ['ok', { id: msg.msg_id, created: true }];
        } catch (e) {
          if (e instanceof RqError && e.code === 'RQ_DUPLICATE') continue; // made meanwhile: set it
          throw e;
        }
      }
      const done = await s.locks.exclusive(id, async () => {
        const state = stateOf(s, id);
        if (state !== 'que' && state !== 'run' && state !== 'err') return false;
        const msg = current(s, state, id);
        applyFields(msg, f, Date.now());
        msg.rev = (msg.rev ?? 0) + 1;
        delete msg.lease;
        delete msg.dead;
        delete msg.dead_at;
        await requeue(s, state, id, msg, f.payload ? { files: { [PAYLOAD]: f.payload } } : {});
        return true;
      });
      if (done) return ['ok', { id, created: false }];
    }
    throw new RqError('RQ_IO', `cannot set ${extId}: it keeps changing`);
  },
});
