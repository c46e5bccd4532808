/**
 * `respawn` (pull model): up to `limit` dead letters, oldest first, or the one named by
 * `ref` (an external id or a short id; the dashboard's button), back to the tail of que
 * with 1 try and a TTL of `ttl_ms` (0: none). Precondition: a pull queue; each message
 * still a dead letter in err, under its lock. On disk: renamed err → que with its `msg`
 * rewritten (status `respawned`), one durable commit each. Errors: RQ_NOT_PULL,
 * RQ_BAD_REQUEST naming the field. Reply: `["ok", <respawned>]` (0 for a `ref` that names
 * no dead letter).
 */
import { args, optExtId, optMs, optNumber } from '../args.js';
import { command } from '../command.js';
import { stateOf } from '../lookup.js';
import { findExt, oldestDead, requeue } from '../pull-messages.js';

export const respawn = command({
  needsPull: true,
  arg: args({ limit: optNumber('limit', { min: 1, integer: true }), ttl_ms: optMs('ttl_ms'), ref: optExtId('ref') }),
  run: async (s, a): Promise<['ok', number]> => {
    const ttlMs = a.ttl_ms ?? 0;
    const ids = a.ref === undefined ? [...oldestDead(s, a.limit ?? 1)] : [findExt(s, a.ref) ?? a.ref].filter((id) => s.pull.dead.has(id));
    let n = 0;
    for (const id of ids) {
      const moved = await s.locks.exclusive(id, async () => {
        if (stateOf(s, id) !== 'err') return false;
        const msg = s.store.readMsg('err', id);
        const now = Date.now();
        delete msg.dead;
        delete msg.dead_at;
        msg.tries = 1;
        if (ttlMs > 0) msg.expires_at = now + ttlMs;
        else delete msg.expires_at;
        msg.due = now / 1000;
        // The tail: a rank, if it has one, moves with it.
        if (msg.rank !== undefined) msg.rank = now;
        msg.rev = (msg.rev ?? 0) + 1;
        await requeue(s, 'err', id, msg, { status: 'respawned' });
        return true;
      });
      if (moved) n++;
    }
    return ['ok', n];
  },
});
