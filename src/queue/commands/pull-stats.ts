/**
 * `pull_stats` (pull model): ready, delayed, leased and dead messages now; `evicted`
 * (removed by their TTL before they finished) counts since `started` (epoch ms), when this
 * process began to serve the queue (kept while the queue is put away). Precondition: not DOWN. On disk: nothing. Errors: none. Reply:
 * `["ok", {ready, delayed, leased, dead, evicted, started}]`.
 */
import { anyArg } from '../args.js';
import { command } from '../command.js';
import { leasedCount } from '../pull-messages.js';

/** Ready, delayed (in que, not due), leased and dead messages; evicted since `started`, when the process began to serve the queue (epoch ms). */
export type PullStats = Record<'ready' | 'delayed' | 'leased' | 'dead' | 'evicted' | 'started', number>;

export const pullStats = command({
  arg: anyArg,
  run: (s): ['ok', PullStats] => {
    const ready = s.que.readySize;
    return ['ok', { ready, delayed: s.que.size - ready, leased: leasedCount(s), dead: s.pull.dead.size, evicted: s.stats.evicted, started: s.startedAt }];
  },
});
