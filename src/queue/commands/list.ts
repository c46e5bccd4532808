/**
 * `list` (pull model): ready messages (in lease order), delayed ones (in the same order),
 * leased ones (in lease order) or dead letters (oldest first), from `offset`, at most
 * `limit` (default 100, at most 1000); without payloads (peek has them). Ready, delayed
 * and dead letters are read from their files, only those listed; leased ones come from
 * memory. Precondition: not DOWN. On disk: nothing (reads). Errors: RQ_BAD_REQUEST
 * `'which' must be "ready", "delayed", "leased" or "dead", got <value>` and naming the
 * field. Reply: `["ok", [<pulled view>...]]`.
 */
import * as v from 'valibot';
import { anyValue, args, optNumber } from '../args.js';
import { command } from '../command.js';
import type { Message } from '../../domain/message.js';
import type { State } from '../../domain/states.js';
import { view } from '../pull-messages.js';
import type { QueueState } from '../state.js';
import type { PulledView } from '../../rpc/queue-api.js';
import { MAX_LEASE_COUNT } from './lease.js';

const WHICH = ['ready', 'delayed', 'leased', 'dead'] as const;
type Which = (typeof WHICH)[number];

/** The state and the ids (or, leased, the messages) of a listing, in its order. */
function* listed(s: QueueState, which: Which): Generator<{ state: State; id: string; msg?: Message }> {
  if (which === 'leased') {
    for (const r of s.run.values()) if (r.msg.lease) yield { state: 'run', id: r.id, msg: r.msg };
  } else if (which === 'dead') {
    for (const id of s.pull.dead.keys()) yield { state: 'err', id };
  } else {
    for (const e of which === 'ready' ? s.que.readyEntries() : s.que.delayedInReadyOrder()) yield { state: 'que', id: e.id };
  }
}

export const list = command({
  arg: args({
    which: v.pipe(
      anyValue,
      v.check((x) => WHICH.some((w) => w === x), (issue) => `'which' must be "ready", "delayed", "leased" or "dead", got ${JSON.stringify(issue.input)}`),
      v.transform((x) => x as Which),
    ),
    offset: optNumber('offset', { min: 0, integer: true }),
    limit: optNumber('limit', { min: 1, max: MAX_LEASE_COUNT, integer: true }),
  }),
  run: (s, a): ['ok', PulledView[]] => {
    const limit = a.limit ?? 100;
    const out: PulledView[] = [];
    let skip = a.offset ?? 0;
    for (const { state, id, msg } of listed(s, a.which)) {
      if (out.length >= limit) break;
      if (skip > 0) {
        skip--;
        continue;
      }
      try {
        out.push(view(s, state, msg ?? s.store.readMsg(state, id), false));
      } catch {
        // taken meanwhile
      }
    }
    return ['ok', out];
  },
});
