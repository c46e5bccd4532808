// The counters of the `stats` RPC: cumulative run-duration buckets (Prometheus style) and
// the trailing-minute completion counts, with the clock passed in.
import { describe, expect, it } from 'vitest';
import { QueueStats } from '../../src/queue/queue-stats.js';

describe('QueueStats', () => {
  it('starts at zero with every bucket present', () => {
    expect(new QueueStats().snapshot(0)).toEqual({
      created: 0,
      done: 0,
      err: 0,
      relayed: 0,
      spawn_failures: 0,
      run_seconds: { sum: 0, count: 0, buckets: { '0.1': 0, '0.5': 0, '1': 0, '5': 0, '30': 0, '120': 0, '600': 0, '+Inf': 0 } },
      done_last_minute: 0,
      err_last_minute: 0,
    });
  });

  it('counts run durations in cumulative buckets; a bound is inclusive', () => {
    const s = new QueueStats();
    for (const sec of [0.05, 0.1, 0.7, 4, 700]) s.runEnded(sec);
    const { run_seconds } = s.snapshot(0);
    expect(run_seconds.count).toBe(5);
    expect(run_seconds.sum).toBeCloseTo(704.85);
    expect(run_seconds.buckets).toEqual({ '0.1': 2, '0.5': 2, '1': 3, '5': 4, '30': 4, '120': 4, '600': 4, '+Inf': 5 });
  });

  it('counts completions of the trailing 60 s only, and the totals forever', () => {
    const s = new QueueStats();
    const t0 = 1_800_000_000_000;
    s.messageFinished('done', t0);
    s.messageFinished('done', t0 + 30_000);
    s.messageFinished('err', t0 + 59_000);
    s.messageFinished('relayed', t0 + 59_000);
    expect(s.snapshot(t0 + 59_500)).toMatchObject({ done: 2, err: 1, relayed: 1, done_last_minute: 2, err_last_minute: 1 });
    expect(s.snapshot(t0 + 60_000)).toMatchObject({ done_last_minute: 1, err_last_minute: 1 });
    // t0 + 90 s reuses the slot of t0 + 30 s, which starts again from zero.
    s.messageFinished('done', t0 + 90_000);
    expect(s.snapshot(t0 + 90_000)).toMatchObject({ done: 3, done_last_minute: 1, err_last_minute: 1 });
    expect(s.snapshot(t0 + 200_000)).toMatchObject({ done: 3, err: 1, done_last_minute: 0, err_last_minute: 0 });
  });

  it('counts creations and spawn failures', () => {
    const s = new QueueStats();
    s.messageCreated();
    s.messageCreated();
    s.spawnFailed();
    expect(s.snapshot(0)).toMatchObject({ created: 2, spawn_failures: 1 });
  });
});
