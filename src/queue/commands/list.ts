/**
 * `list` (pull model): ready messages (in lease order) or delayed ones (in the same
 * order), from `offset`, at most `limit` (default 100, at most 1000); without payloads
 * (peek has them). Precondition: not DOWN. On disk: nothing (reads). Errors:
 * RQ_BAD_REQUEST `'which' must be "ready" or "delayed", got <value>` and naming the
 * field. Reply: `["ok", [<pulled view>...]]`.
 */
import * as v from 'valibot';
import { anyValue, args, optNumber } from '../args.js';
import { command } from '../command.js';
import { view } from '../pull-messages.js';
import type { PulledView } from '../../rpc/queue-api.js';
import { MAX_LEASE_COUNT } from './lease.js';

export const list = command({
  arg: args({
    which: v.pipe(
      anyValue,
      v.check((x) => x === 'ready' || x === 'delayed', (issue) => `'which' must be "ready" or "delayed", got ${JSON.stringify(issue.input)}`),
      v.transform((x) => x as 'ready' | 'delayed'),
    ),
    offset: optNumber('offset', { min: 0, integer: true }),
    limit: optNumber('limit', { min: 1, max: MAX_LEASE_COUNT, integer: true }),
  }),
  run: (s, a): ['ok', PulledView[]] => {
    const entries = a.which === 'ready' ? s.que.readyEntries() : s.que.delayedInReadyOrder();
    const limit = a.limit ?? 100;
    const out: PulledView[] = [];
    let skip = a.offset ?? 0;
    for (const e of entries) {
      if (out.length >= limit) break;
      if (skip > 0) {
        skip--;
        continue;
      }
      try {
        out.push(view(s, 'que', s.store.readMsg('que', e.id), false));
      } catch {
        // taken meanwhile
      }
    }
    return ['ok', out];
  },
});
