/**
 * `bulk` (beyond RQ; the dashboard's bulk actions, domain/bulk-ops.ts): one operation on
 * up to BULK_BATCH messages of one state. Argument: `{"op": "retry"|"clone"|"delete"|
 * "move", "state": <state>, "ids": [<short id>...], "dest"?: <queue>}`. Precondition: each
 * message still in `state`, under its lock; one that has moved on (or is gone) is skipped
 * and counted, never changed. The messages of a call are handled together, so their
 * durable moves share the group commits (one flush for the batch, not one per message).
 *
 * - retry: err → que with `msg` rewritten (due now, count 0, a dead letter's marks
 *   dropped) and status `retried`, the move `respawn` makes (pull-messages.ts requeue).
 * - clone: a new message straight into que, as `clone_message` makes it (`cloned_from`).
 * - delete: removed, as `delete_message` removes it.
 * - move: the queue `dest` makes the copies (its `adopt` command, one call for the batch)
 *   while this queue holds the messages' locks and keeps them out of the scheduler's
 *   reach; each one copied is then removed here. At least once: a crash between the two
 *   leaves a message in both queues.
 *
 * Errors: RQ_BAD_REQUEST naming the field (an unknown op, an op that does not apply to the
 * state, no ids, a bad `dest`). Reply: `["ok", {done, skipped, failed: [{id, error}]}]`.
 */
import * as v from 'valibot';
import { BULK_BATCH, BULK_FROM, BULK_OPS } from '../../domain/bulk-ops.js';
import { RqError, coerceError } from '../../domain/errors.js';
import { isSafeId } from '../../domain/ids.js';
import { isValidQueueName } from '../../domain/names.js';
import { STATES, type State } from '../../domain/states.js';
import { isRefusal } from '../../client/refusal.js';
import type { BulkResult } from '../../rpc/queue-api.js';
import { anyValue, args, optOneOf, optString, required } from '../args.js';
import { command } from '../command.js';
import { stateOf } from '../lookup.js';
import { queued } from '../que-memory.js';
import { requeue } from '../pull-messages.js';
import { nowSec, type QueueState } from '../state.js';
import { cloneOf } from './clone-message.js';
import { deleteOne } from './delete-message.js';

/** `ids`: 1 to BULK_BATCH message ids, each once. */
export const bulkIds = v.pipe(
  anyValue,
  v.check(
    (x) => Array.isArray(x) && x.length > 0 && x.length <= BULK_BATCH && x.every(isSafeId) && new Set(x).size === x.length,
    (issue) => `'ids' must be 1 to ${BULK_BATCH} different message ids, got ${JSON.stringify(issue.input)?.slice(0, 200)}`,
  ),
  v.transform((x) => x as string[]),
);

export const bulkState = required('state', optOneOf('state', STATES));

type Outcome = 'done' | 'skipped';

/** Count each message's outcome: done, skipped, or failed with its reason. */
async function tally(ids: readonly string[], one: (id: string) => Promise<Outcome>): Promise<BulkResult> {
  const result: BulkResult = { done: 0, skipped: 0, failed: [] };
  await Promise.all(
    ids.map(async (id) => {
      try {
        result[await one(id)]++;
      } catch (e) {
        result.failed.push({ id, error: coerceError(e).message });
      }
    }),
  );
  return result;
}

/** err → que, run again: same id and attachments. */
async function retry(s: QueueState, id: string): Promise<Outcome> {
  const msg = s.store.readMsg('err', id);
  msg.due = nowSec();
  msg.count = 0;
  delete msg.dead;
  delete msg.dead_at;
  if (typeof msg.tries === 'number' && msg.tries < 1) msg.tries = 1;
  await requeue(s, 'err', id, msg, { status: 'retried' });
  return 'done';
}

/** Each message, under its lock, if it is still in `state`. */
function each(s: QueueState, state: State, ids: readonly string[], op: (id: string) => Promise<unknown>): Promise<BulkResult> {
  return tally(ids, (id) =>
    s.locks.exclusive(id, async (): Promise<Outcome> => {
      if (stateOf(s, id) !== state) return 'skipped';
      await op(id);
      return 'done';
    }),
  );
}

/** The move: copies made by `dest`, then the sources removed here (see the file comment). */
function move(s: QueueState, state: State, ids: readonly string[], dest: string): Promise<BulkResult> {
  return s.locks.exclusive(ids, async () => {
    const here = ids.filter((id) => stateOf(s, id) === state);
    // Out of the scheduler's reach while they are copied (the claim takes no lock).
    const taken = state === 'que' ? here.flatMap((id) => s.que.remove(id) ?? []) : [];
    const putBack = (id: string): void => {
      const entry = taken.find((e) => e.id === id);
      if (entry) queued(s, entry);
    };
    const result: BulkResult = { done: 0, skipped: ids.length - here.length, failed: [] };
    if (here.length === 0) return result;
    const reply = await s.callQueue(dest, 'adopt', { from: s.name, state, ids: here }).catch((e: unknown) => coerceError(e).message);
    if (typeof reply === 'string' || isRefusal(reply)) {
      for (const id of here) {
        putBack(id);
        result.failed.push({ id, error: `queue ${dest}: ${typeof reply === 'string' ? reply : reply[1]}` });
      }
      return result;
    }
    const { made, failed } = reply[1];
    for (const id of here) {
      if (made[id] === undefined) {
        putBack(id);
        continue;
      }
      await deleteOne(s, id);
      result.done++;
    }
    result.failed.push(...failed);
    s.log.info({ dest, moved: result.done }, 'messages moved');
    return result;
  });
}

export const bulk = command({
  writes: true,
  arg: args({ op: required('op', optOneOf('op', BULK_OPS)), state: bulkState, ids: bulkIds, dest: optString('dest') }),
  run: async (s, a): Promise<['ok', BulkResult]> => {
    if (!BULK_FROM[a.op].includes(a.state)) {
      throw new RqError('RQ_BAD_REQUEST', `'op' ${a.op} applies to messages in ${BULK_FROM[a.op].join(', ')}, not ${a.state}`);
    }
    if (a.op === 'move') {
      if (!isValidQueueName(a.dest) || a.dest === s.name) throw new RqError('RQ_BAD_REQUEST', `'dest' must name another queue, got ${JSON.stringify(a.dest)}`);
      return ['ok', await move(s, a.state, a.ids, a.dest)];
    }
    const op = { retry: (id: string) => retry(s, id), clone: (id: string) => cloneOf(s, id, 'que'), delete: (id: string) => deleteOne(s, id) }[a.op];
    const result = await each(s, a.state, a.ids, op);
    s.log.info({ op: a.op, state: a.state, done: result.done, skipped: result.skipped, failed: result.failed.length }, 'bulk action');
    return ['ok', result];
  },
});
