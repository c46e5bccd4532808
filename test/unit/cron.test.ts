/**
 * Cron schedules (src/queue/cron.ts) on a fixed clock in America/New_York: what fires when,
 * across daylight-saving changes, restarts (the record in cron.json), missed times, bad
 * entries and a fire cut short between prep and commit. The clock is stepped by hand and
 * each step runs the schedule's check, so every fire is seen at the moment it happens.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CronSchedule, compileCron, instantOf, wallOf } from '../../src/queue/cron.js';
import { RqError } from '../../src/domain/errors.js';
import type { ScheduleEntry } from '../../src/domain/queue-config.js';

const TZ = 'America/New_York';
/** Message ids, unique across the schedules of a test as the queue's are. */
let made = 0;
const iso = (sec: number): string => new Date(sec * 1000).toISOString().replace('.000Z', 'Z');

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rq-cron-'));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

function entry(cron: string, extra: Partial<ScheduleEntry> = {}): ScheduleEntry {
  return { cron, params: { param1: 'p', param2: null, param3: null, param4: null }, missed: 'skip', ...extra };
}

/** A schedule on a hand-driven clock; `fired` collects every message made, as ISO due times. */
function schedule(entries: ScheduleEntry[], startAt: string, opts: { up?: () => boolean; beforeCommit?: () => void } = {}) {
  let now = Date.parse(startAt);
  const fired: string[] = [];
  const inputs: Array<Record<string, unknown>> = [];
  const prepped = new Map<string, Record<string, unknown>>();
  const committed = new Set<string>();
  const s = new CronSchedule({
    queue: 'q',
    file: path.join(dir, 'cron.json'),
    log: pino({ level: 'silent' }),
    tz: TZ,
    now: () => now,
    isUp: opts.up ?? (() => true),
    prep: async (input) => {
      const id = `m${++made}`;
      prepped.set(id, input);
      return id;
    },
    commit: async (id) => {
      opts.beforeCommit?.();
      // As the queue's commit: only a message still in prep.
      if (!prepped.has(id) || committed.has(id)) throw new RqError('RQ_NOT_IN_STATE', 'cannot find message');
      committed.add(id);
      const input = prepped.get(id) as Record<string, unknown>;
      inputs.push(input);
      fired.push(iso(input['due'] as number));
    },
  });
  s.configure(entries);
  return {
    s,
    fired,
    inputs,
    prepped,
    /** Step the clock to `until` in 20 s steps, checking at each. */
    async run(until: string): Promise<void> {
      await s.start();
      const end = Date.parse(until);
      while (now < end) {
        now += 20_000;
        await s.check();
      }
    },
    setNow(at: string) {
      now = Date.parse(at);
    },
  };
}

describe('wall-clock conversions', () => {
  it('maps wall time to instants, earlier of a repeated time, shifted across a gap', () => {
    expect(new Date(instantOf(Date.parse('2026-07-01T12:00:00Z'), TZ)).toISOString()).toBe('2026-07-01T16:00:00.000Z');
    // 01:30 occurs twice on 2026-11-01: EDT (05:30Z) first.
    expect(new Date(instantOf(Date.parse('2026-11-01T01:30:00Z'), TZ)).toISOString()).toBe('2026-11-01T05:30:00.000Z');
    // 02:30 does not exist on 2026-03-08: it becomes 03:30 EDT (07:30Z).
    expect(new Date(instantOf(Date.parse('2026-03-08T02:30:00Z'), TZ)).toISOString()).toBe('2026-03-08T07:30:00.000Z');
    expect(new Date(wallOf(Date.parse('2026-11-01T06:30:00Z'), TZ)).toISOString()).toBe('2026-11-01T01:30:00.000Z');
  });
});

describe('cron schedule', () => {
  it('makes the message up to a minute early, due on the minute, with RQ fields', async () => {
    const c = schedule([entry('*/5 * * * *')], '2026-07-01T12:00:30Z');
    await c.run('2026-07-01T12:12:00Z');
    expect(c.fired).toEqual(['2026-07-01T12:05:00Z', '2026-07-01T12:10:00Z']);
    expect(c.inputs[0]).toEqual({ param1: 'p', param2: null, param3: null, param4: null, dest: 'q', src: 'cron', due: Date.parse('2026-07-01T12:05:00Z') / 1000 });
  });

  it('each entry fires on its own, even two in the same minute (RQ kept one per queue)', async () => {
    const c = schedule([entry('0 * * * *'), entry('0 * * * *', { params: { param1: 'other', param2: null, param3: null, param4: null } })], '2026-07-01T11:58:00Z');
    await c.run('2026-07-01T12:01:00Z');
    expect(c.inputs.map((i) => i['param1'])).toEqual(['p', 'other']);
  });

  it('clocks going back: a daily 01:30 fires once, the repeated hour is not run again', async () => {
    const c = schedule([entry('30 1 * * *'), entry('*/15 1 * * *', { params: { param1: 'q', param2: null, param3: null, param4: null } })], '2026-10-31T23:00:00Z');
    await c.run('2026-11-01T09:00:00Z');
    const daily = c.inputs.filter((i) => i['param1'] === 'p').map((i) => iso(i['due'] as number));
    const quarter = c.inputs.filter((i) => i['param1'] === 'q').map((i) => iso(i['due'] as number));
    expect(daily).toEqual(['2026-11-01T05:30:00Z']);
    expect(quarter).toEqual(['2026-11-01T05:00:00Z', '2026-11-01T05:15:00Z', '2026-11-01T05:30:00Z', '2026-11-01T05:45:00Z']);
  });

  it('clocks going forward: a daily 02:30 still fires (at 03:30), and no instant fires twice', async () => {
    const c = schedule([entry('30 2 * * *'), entry('*/30 * * * *', { params: { param1: 'h', param2: null, param3: null, param4: null } })], '2026-03-08T05:50:00Z');
    await c.run('2026-03-08T08:10:00Z');
    const daily = c.inputs.filter((i) => i['param1'] === 'p').map((i) => iso(i['due'] as number));
    const half = c.inputs.filter((i) => i['param1'] === 'h').map((i) => iso(i['due'] as number));
    expect(daily).toEqual(['2026-03-08T07:30:00Z']);
    expect(half).toEqual(['2026-03-08T06:00:00Z', '2026-03-08T06:30:00Z', '2026-03-08T07:00:00Z', '2026-03-08T07:30:00Z', '2026-03-08T08:00:00Z']);
  });

  it('a restart does not fire a due time again: the record is on disk', async () => {
    const a = schedule([entry('0 12 * * *')], '2026-07-01T15:58:00Z');
    await a.run('2026-07-01T15:59:40Z');
    expect(a.fired).toEqual(['2026-07-01T16:00:00Z']);
    // The process restarts 20 s later, still inside the minute before the due time.
    const b = schedule([entry('0 12 * * *')], '2026-07-01T15:59:40Z');
    await b.run('2026-07-01T16:05:00Z');
    expect(b.fired).toEqual([]);
    expect(b.s.describe()[0]).toMatchObject({ last: Date.parse('2026-07-01T16:00:00Z') / 1000, next: Date.parse('2026-07-02T16:00:00Z') / 1000 });
  });

  it('missed "skip" (RQ) fires nothing for downtime; "once" fires one message, due now', async () => {
    const first = schedule([entry('0 * * * *'), entry('30 * * * *', { missed: 'once' })], '2026-07-01T11:58:00Z');
    await first.run('2026-07-01T12:31:00Z');
    expect(first.fired).toEqual(['2026-07-01T12:00:00Z', '2026-07-01T12:30:00Z']);
    // Down for three hours.
    const after = schedule([entry('0 * * * *'), entry('30 * * * *', { missed: 'once' })], '2026-07-01T15:40:00Z');
    await after.run('2026-07-01T15:41:00Z');
    expect(after.inputs).toHaveLength(1);
    expect(after.inputs[0]).toMatchObject({ due: Date.parse('2026-07-01T15:40:00Z') / 1000 });
  });

  it('fires nothing while the queue is not UP', async () => {
    const c = schedule([entry('* * * * *')], '2026-07-01T12:00:00Z', { up: () => false });
    await c.run('2026-07-01T12:05:00Z');
    expect(c.fired).toEqual([]);
  });

  it('a bad entry is reported with its number and text, and the others keep firing', async () => {
    const c = schedule(
      [entry('61 * * * *'), entry('@reboot'), entry('* * * * * *'), entry('0 * * * *', { missed: 'later' }), entry('*/10 * * * *')],
      '2026-07-01T12:00:00Z',
    );
    await c.run('2026-07-01T12:10:00Z');
    expect(c.fired).toEqual(['2026-07-01T12:10:00Z']);
    const errors = c.s.describe().map((d) => d.error);
    expect(errors[0]).toMatch(/^schedule entry 1 \("61 \* \* \* \*"\): .*61/);
    expect(errors[1]).toMatch(/^schedule entry 2 \("@reboot"\): unknown alias @reboot/);
    expect(errors[2]).toMatch(/^schedule entry 3 .*expected 5 fields/);
    expect(errors[3]).toMatch(/^schedule entry 4 .*"missed" must be "skip" or "once", not "later"/);
    expect(errors[4]).toBeUndefined();
  });

  it('a fire cut short between its record and its commit is committed at start-up, not made again', async () => {
    const due = Date.parse('2026-07-01T16:00:00Z');
    const key = `0 12 * * * ${JSON.stringify(entry('0 12 * * *').params)}`;
    fs.writeFileSync(path.join(dir, 'cron.json'), JSON.stringify({ [key]: { wall: due - 4 * 3_600_000, at: due, pending: 'left' } }));
    const c = schedule([entry('0 12 * * *')], '2026-07-01T15:59:30Z');
    const leftover = { dest: 'q', src: 'cron', param1: 'p', param2: null, param3: null, param4: null, due: due / 1000 };
    c.prepped.set('left', leftover);
    await c.run('2026-07-01T16:02:00Z');
    expect(c.inputs).toEqual([leftover]);
    expect(c.prepped.size).toBe(1); // no new message was made
  });

  it('a failed commit is retried at the next check, and the due time is not fired twice', async () => {
    let failures = 1;
    const c = schedule([entry('0 12 * * *')], '2026-07-01T15:59:00Z', {
      beforeCommit: () => {
        if (failures-- > 0) throw new Error('disk full');
      },
    });
    await c.run('2026-07-01T16:01:00Z');
    expect(c.fired).toEqual(['2026-07-01T16:00:00Z']);
    expect(c.prepped.size).toBe(1);
  });

  it('drops a malformed record with a warning instead of failing', async () => {
    fs.writeFileSync(path.join(dir, 'cron.json'), JSON.stringify({ x: { wall: 'oops', at: 1 } }));
    const c = schedule([entry('0 12 * * *')], '2026-07-01T15:59:00Z');
    await c.run('2026-07-01T16:01:00Z');
    expect(c.fired).toEqual(['2026-07-01T16:00:00Z']);
    expect(c.s.describe()[0]!.last).toBe(Date.parse('2026-07-01T16:00:00Z') / 1000);
  });

  it('missed "once" on the day clocks go forward waits for the shifted time', async () => {
    const first = schedule([entry('30 2 * * *', { missed: 'once' })], '2026-03-07T07:29:00Z');
    await first.run('2026-03-07T07:31:00Z');
    expect(first.fired).toEqual(['2026-03-07T07:30:00Z']);
    const next = schedule([entry('30 2 * * *', { missed: 'once' })], '2026-03-08T06:50:00Z');
    await next.run('2026-03-08T07:40:00Z');
    expect(next.fired).toEqual(['2026-03-08T07:30:00Z']);
  });

  it('accepts RQ aliases and names', () => {
    for (const text of ['@hourly', '@daily', '@midnight', '@weekly', '@monthly', '@yearly', '@annually', '0 0 * jan sun', '*/5 1-3 1,15 * *']) {
      expect(() => compileCron(text), text).not.toThrow();
    }
  });
});
