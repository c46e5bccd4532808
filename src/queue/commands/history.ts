/**
 * `history` (beyond RQ): the queue's history over `range` (`hour`, `day` or `week`;
 * default `hour`): per minute, 10 minutes or hour, done, err, the most messages seen
 * waiting, and the wait and run times' p50 and p95 in seconds (history.ts, with the file's
 * layout in domain/history-layout.ts). The past periods come from the file, the current
 * one from memory. A put-away queue answers without loading (served-queue.ts).
 * Precondition: none (answers while DOWN). On disk: reads `history.bin`. Errors:
 * RQ_BAD_REQUEST `'range' must be "hour" or "day" or "week", got <value>`. Reply: `{range,
 * step, points: [{t, done, err, waiting, wait_p50, wait_p95, run_p50, run_p95}...]}`.
 */
import * as v from 'valibot';
import { RANGES, emptyPeriods, seriesOf, type HistoryRange, type HistorySeries } from '../../domain/history-layout.js';
import { args, optOneOf } from '../args.js';
import { command } from '../command.js';
import type { QueueStats } from '../queue-stats.js';

export const history = command({
  whileDown: true,
  arg: args({
    range: v.pipe(
      optOneOf('range', RANGES),
      v.transform((x) => x ?? 'hour'),
    ),
  }),
  run: (s, a): HistorySeries => historyReply(s.stats, a),
});

/** The reply, from the queue's counters (loaded or put away). */
export function historyReply(stats: QueueStats, a: { range: HistoryRange }): HistorySeries {
  return stats.history?.series(a.range) ?? seriesOf(a.range, emptyPeriods(a.range, Date.now()));
}
