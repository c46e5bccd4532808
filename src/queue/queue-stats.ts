/**
 * The counters of one queue process since it started, for the `stats` RPC (the web's
 * dashboard and metrics): messages created, messages that reached each final state,
 * runs whose worker could not be started, a histogram of run durations (cumulative
 * buckets, Prometheus style), and the completions of the trailing minute. Memory is fixed
 * however busy the queue is: the trailing minute is a ring of per-second slots, not a
 * list of timestamps. What lasts beyond the process (by minute, and the totals) goes on to
 * the queue's history (history.ts), when it has one.
 */
import { TOTALS_LENGTH, historyTotals, type HistoryTotals } from '../domain/history-layout.js';
import type { StatsCounters } from '../rpc/queue-api.js';
import type { QueueHistory } from './history.js';

/** Upper bounds (seconds) of the run-duration buckets; `+Inf` is implied. */
const RUN_SECONDS_BOUNDS = [0.1, 0.5, 1, 5, 30, 120, 600] as const;

/** Events of the trailing 60 seconds, in 60 one-second slots reused round-robin. */
class MinuteWindow {
  private readonly counts = new Array<number>(60).fill(0);
  /** The epoch second each slot counts; a slot from an older minute is stale. */
  private readonly seconds = new Array<number>(60).fill(-Infinity);

  add(nowMs: number): void {
    const sec = Math.floor(nowMs / 1000);
    const i = sec % 60;
    if (this.seconds[i] !== sec) {
      this.seconds[i] = sec;
      this.counts[i] = 0;
    }
    this.counts[i]!++;
  }

  total(nowMs: number): number {
    const sec = Math.floor(nowMs / 1000);
    let n = 0;
    for (let i = 0; i < 60; i++) if (this.seconds[i]! > sec - 60) n += this.counts[i]!;
    return n;
  }
}

export class QueueStats {
  private created = 0;
  private readonly reached = { done: 0, err: 0, relayed: 0 };
  private spawnFailures = 0;
  private runSum = 0;
  private runCount = 0;
  /** Cumulative: runs of at most RUN_SECONDS_BOUNDS[i] seconds. */
  private readonly runBuckets = RUN_SECONDS_BOUNDS.map(() => 0);
  private readonly doneWindow = new MinuteWindow();
  private readonly errWindow = new MinuteWindow();

  /** Messages removed by their time-to-live before they finished (the pull model's `evicted`). */
  evicted = 0;

  /** Where the counts that last go (none in the unit tests). */
  readonly history: QueueHistory | undefined;

  constructor(history?: QueueHistory) {
    this.history = history;
  }

  messageCreated(): void {
    this.created++;
  }

  /** A message reached a final state (a run's end, or a coalesced duplicate with it). */
  messageFinished(state: 'done' | 'err' | 'relayed', nowMs = Date.now()): void {
    this.reached[state]++;
    if (state === 'done') this.doneWindow.add(nowMs);
    if (state === 'err') this.errWindow.add(nowMs);
    if (state !== 'relayed') this.history?.finished(state, nowMs);
  }

  /** A run started (a worker, or a lease) `waitMs` after its message was ready. */
  runStarted(waitMs: number): void {
    this.history?.started(waitMs);
  }

  /** A run whose worker could not be started (spawn error, or the script not runnable). */
  spawnFailed(): void {
    this.spawnFailures++;
  }

  /** A worker ran for `seconds`, from its spawn to its exit (or a lease, to its ack or finish). */
  runEnded(seconds: number): void {
    this.history?.ran(seconds);
    this.runSum += seconds;
    this.runCount++;
    RUN_SECONDS_BOUNDS.forEach((bound, i) => {
      if (seconds <= bound) this.runBuckets[i]!++;
    });
  }

  /** The totals kept across restarts (none without a history). */
  totals(): HistoryTotals {
    return this.history?.totalsNow() ?? historyTotals(new Float64Array(TOTALS_LENGTH));
  }

  snapshot(nowMs = Date.now()): StatsCounters {
    const buckets: Record<string, number> = {};
    RUN_SECONDS_BOUNDS.forEach((bound, i) => (buckets[String(bound)] = this.runBuckets[i]!));
    buckets['+Inf'] = this.runCount;
    return {
      created: this.created,
      ...this.reached,
      spawn_failures: this.spawnFailures,
      run_seconds: { sum: this.runSum, count: this.runCount, buckets },
      done_last_minute: this.doneWindow.total(nowMs),
      err_last_minute: this.errWindow.total(nowMs),
    };
  }
}
