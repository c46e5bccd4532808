/**
 * `peek` (pull model): without `ref`, the message the next lease would take; with it,
 * that message in any state but done (with `all`, done too), once no command is changing
 * it. A message past its TTL is not shown. Precondition: none beyond not DOWN. On disk:
 * nothing (reads). Errors: RQ_BAD_REQUEST naming the field. Reply: `["ok", <pulled view>
 * | null]`.
 */
import { isSafeId } from '../../domain/ids.js';
import { anyValue, args, optExtId } from '../args.js';
import { command } from '../command.js';
import { stateOf } from '../lookup.js';
import { current, findExt, isRemovable, pastTtl, view } from '../pull-messages.js';
import type { PulledView } from '../../rpc/queue-api.js';
import type { QueueState } from '../state.js';

/** The message the next lease would take, if any. */
function next(s: QueueState): PulledView | null {
  const now = Date.now();
  for (const e of s.que.readyEntries()) {
    if (e.pull?.e !== undefined && e.pull.e <= now) continue;
    try {
      return view(s, 'que', s.store.readMsg('que', e.id));
    } catch {
      // taken meanwhile
    }
  }
  return null;
}

export const peek = command({
  arg: args({ ref: optExtId('ref'), all: anyValue }),
  run: async (s, a): Promise<['ok', PulledView | null]> => {
    if (a.ref === undefined) return ['ok', next(s)];
    const id = findExt(s, a.ref) ?? (isSafeId(a.ref) ? a.ref : undefined);
    if (id === undefined) return ['ok', null];
    await s.locks.settled(id);
    const state = stateOf(s, id);
    if (!isRemovable(state) || (state === 'done' && a.all !== true)) return ['ok', null];
    try {
      const msg = current(s, state, id);
      // Past its TTL, its timer not yet run: gone already for a reader.
      return ['ok', pastTtl(state, msg) ? null : view(s, state, msg)];
    } catch {
      return ['ok', null];
    }
  },
});
