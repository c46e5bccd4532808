/**
 * `stats`: the dashboard's whole view of the queue in one reply (the web's QueueStatus,
 * src/web/queue-info.ts, is this reply's type), with the counters since the queue process
 * started, the retention limits and the last disk usage measured (null before the first).
 * The admin flags are read again now. Precondition: none (answers while DOWN). On disk:
 * nothing. Errors: none.
 */
import type { QueueStatus } from '../../rpc/queue-api.js';
import { anyArg } from '../args.js';
import { command } from '../command.js';
import { refreshFlags } from '../flags.js';
import { diskUsage } from '../housekeeping.js';
import { numMessages, statusOf, type QueueState } from '../state.js';

export const stats = command({ whileDown: true, arg: anyArg, run: (s) => statsOf(s) });

/** The reply of `stats` (also each queue's part of `host_stats`). */
export function statsOf(s: QueueState): QueueStatus {
  refreshFlags(s);
  return {
    pid: process.pid,
    status: statusOf(s),
    admin: s.admin,
    uptime: Math.floor((Date.now() - s.startedAt) / 1000),
    counts: numMessages(s),
    schedule: s.cron.describe(),
    ...s.stats.snapshot(),
    totals: s.stats.totals(),
    cleaner: s.config.cleaner,
    disk: diskUsage(s),
  };
}
