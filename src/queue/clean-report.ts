/**
 * The memory of housekeeping (housekeeping.ts): the clean under way, whose report is the
 * `clean` command's reply, and the disk usage last measured. Its own module so that the
 * queue state (state.ts) can hold it.
 */
import type { CleanReport, DiskUsage } from '../rpc/queue-api.js';

/** The memory of housekeeping: the clean under way, and the disk usage last measured. */
export interface HousekeepingState {
  running: { report: CleanReport; done: Promise<void> } | undefined;
  usage: DiskUsage | null;
  measuring: boolean;
  /** A clean finished since the last walk started: walk again as soon as the walk share allows. */
  stale: boolean;
  usageStartedMs: number;
}
