/**
 * Retention limits (src/domain/retention.ts): the `cleaner` key of a queue's config.json
 * (defaults, validation naming the file and field, what is written back), the `clean`
 * argument, and the rule that picks what a clean removes: the oldest messages, while the
 * age, count or bytes limit is exceeded.
 */
import { describe, expect, it } from 'vitest';
import { idTimeMs, idTimestamp } from '../../src/domain/ids.js';
import { parseQueueConfig, serialiseQueueConfig } from '../../src/domain/queue-config.js';
import {
  CLEANER_DEFAULTS,
  checkCleaner,
  isSelected,
  limitsByState,
  normaliseCleaner,
  parseCleanArgument,
  planClean,
  planRemovesAny,
  serialisedCleaner,
  type CleanPlan,
  type RetentionLimits,
} from '../../src/domain/retention.js';

const FILE = '/rq/queues/q1/config.json';
const NOW = Date.UTC(2026, 10, 21, 12, 0, 0);
const DAY = 86_400_000;

/** A short id allocated `agoMs` before NOW. */
const idAgo = (agoMs: number, inode = 7): string => `${idTimestamp(new Date(NOW - agoMs))}.${inode}`;

/** An RqError with this code and message. */
const rqError = (code: string, message: string): unknown => expect.objectContaining({ name: 'RqError', code, message });

/** The ids a plan removes from `ids` (oldest first, aged by the time in the id), with the bytes of each, as a clean walks them. */
function selected(plan: CleanPlan, ids: string[], bytesOf: (id: string) => number = () => 0): string[] {
  const progress = { removed: 0, freedBytes: 0 };
  const out: string[] = [];
  for (const id of ids) {
    if (!isSelected(plan, progress, idTimeMs(id))) break;
    progress.removed++;
    progress.freedBytes += bytesOf(id);
    out.push(id);
  }
  return out;
}

const limits = (l: Partial<RetentionLimits>): RetentionLimits => ({ max_age_days: null, max_count: null, max_bytes: null, ...l });

describe('the cleaner config', () => {
  it('defaults to RQ’s 2 days for done and relayed, 30 days for err, no count or bytes limit', () => {
    expect(normaliseCleaner(undefined)).toEqual({ max_age_days: 2, max_count: null, max_bytes: null, err: { max_age_days: 30, max_count: null, max_bytes: null } });
    expect(checkCleaner(null, FILE)).toBe(CLEANER_DEFAULTS);
    expect(parseQueueConfig('{"name":"q1","script":"s"}', FILE).cleaner).toEqual(CLEANER_DEFAULTS);
  });

  it('takes each limit given and keeps the defaults of the others; null is no limit', () => {
    const c = checkCleaner({ max_count: 60000, max_bytes: 10737418240, err: { max_age_days: null, max_count: 5 } }, FILE);
    expect(c).toEqual({ max_age_days: 2, max_count: 60000, max_bytes: 10737418240, err: { max_age_days: null, max_count: 5, max_bytes: null } });
    expect(checkCleaner({ max_age_days: 0.5 }, FILE).max_age_days).toBe(0.5);
  });

  it.each<[unknown, string]>([
    [{ max_age_days: -1 }, 'expected "cleaner.max_age_days" to be a number of days >= 0, or null for no age limit, got -1'],
    [{ max_age_days: '2' }, 'expected "cleaner.max_age_days" to be a number of days >= 0, or null for no age limit, got "2"'],
    [{ max_count: 1.5 }, 'expected "cleaner.max_count" to be a whole number of messages >= 0, or null for no count limit, got 1.5'],
    [{ max_bytes: '10G' }, 'expected "cleaner.max_bytes" to be a whole number of bytes >= 0, or null for no size limit, got "10G"'],
    [{ err: { max_count: -3 } }, 'expected "cleaner.err.max_count" to be a whole number of messages >= 0, or null for no count limit, got -3'],
    [{ max_days: 2 }, 'unknown key "cleaner.max_days" (the keys are max_age_days, max_count, max_bytes, err)'],
    [{ err: { days: 2 } }, 'unknown key "cleaner.err.days" (the keys are max_age_days, max_count, max_bytes)'],
    [{ err: 30 }, 'expected "cleaner.err" to be an object such as {"max_age_days": 30}, got 30'],
    [[2], 'expected "cleaner" to be an object such as {"max_age_days": 2}, got [2]'],
  ])('refuses %j with an RQ_CONFIG error naming the file and the field', (cleaner, problem) => {
    expect(() => parseQueueConfig(JSON.stringify({ name: 'q1', script: 's', cleaner }), FILE)).toThrow(rqError('RQ_CONFIG', `${FILE}: ${problem}`));
  });

  it('normalises a bad value to its default where nothing validates (queue creation)', () => {
    expect(normaliseCleaner({ max_age_days: -1, max_count: 3, bogus: 1 })).toEqual({ ...CLEANER_DEFAULTS, max_count: 3 });
    expect(normaliseCleaner('x')).toBe(CLEANER_DEFAULTS);
  });

  it('is written back only when it is not the default, and reads back the same', () => {
    expect(serialisedCleaner(CLEANER_DEFAULTS)).toBeUndefined();
    const config = parseQueueConfig(JSON.stringify({ name: 'q1', script: 's', cleaner: { max_count: 10, err: { max_bytes: 4096 } } }), FILE);
    const text = serialiseQueueConfig(config);
    expect(text).toContain('"cleaner":{"max_age_days":2,"max_count":10,"max_bytes":null,"err":{"max_age_days":30,"max_count":null,"max_bytes":4096}}');
    expect(parseQueueConfig(text, FILE)).toEqual(config);
    expect(serialiseQueueConfig(parseQueueConfig('{"name":"q1","script":"s"}', FILE))).not.toContain('cleaner');
  });
});

describe('the clean argument and its override', () => {
  it('replaces the age of done and relayed, never err’s', () => {
    const c = checkCleaner({ max_count: 9 }, FILE);
    const byState = limitsByState(c, parseCleanArgument({ max_age_days: 0 }));
    expect(byState.done).toEqual({ max_age_days: 0, max_count: 9, max_bytes: null });
    expect(byState.relayed).toEqual(byState.done);
    expect(byState.err).toEqual(CLEANER_DEFAULTS.err);
    expect(limitsByState(c, parseCleanArgument({})).done.max_age_days).toBe(2);
  });

  it('refuses a bad max_age_days with a clear RQ_BAD_REQUEST', () => {
    expect(() => parseCleanArgument({ max_age_days: 'soon' })).toThrow(rqError('RQ_BAD_REQUEST', `'max_age_days' must be a number of days >= 0, got "soon"`));
    expect(parseCleanArgument({ max_age_days: null })).toEqual({});
  });
});

describe('what a clean removes', () => {
  const ids = [idAgo(5 * DAY, 1), idAgo(3 * DAY, 2), idAgo(2 * DAY + 1000, 3), idAgo(DAY, 4), idAgo(60_000, 5)];

  it('the messages older than max_age_days, by the time in their id', () => {
    const plan = planClean(limits({ max_age_days: 2 }), { count: ids.length }, NOW);
    expect(plan.cutoffMs).toBe(NOW - 2 * DAY);
    expect(selected(plan, ids)).toEqual(ids.slice(0, 3));
    expect(selected(planClean(limits({ max_age_days: 0 }), { count: 5 }, NOW), ids)).toEqual(ids);
  });

  it('the oldest beyond max_count, whatever their age', () => {
    expect(selected(planClean(limits({ max_count: 2 }), { count: 5 }, NOW), ids)).toEqual(ids.slice(0, 3));
    expect(selected(planClean(limits({ max_count: 0 }), { count: 5 }, NOW), ids)).toEqual(ids);
    expect(planRemovesAny(planClean(limits({ max_count: 5 }), { count: 5 }, NOW))).toBe(false);
  });

  it('the oldest until what stays is at most max_bytes', () => {
    const bytes: Record<string, number> = Object.fromEntries(ids.map((id, i) => [id, (i + 1) * 1000]));
    // 15,000 bytes in all; at most 9,000 may stay: the two oldest (1,000 + 2,000) are not enough, the third is.
    const plan = planClean(limits({ max_bytes: 9000 }), { count: 5, bytes: 15000 }, NOW);
    expect(plan.bytesOver).toBe(6000);
    expect(selected(plan, ids, (id) => bytes[id]!)).toEqual(ids.slice(0, 3));
    expect(planRemovesAny(planClean(limits({ max_bytes: 15000 }), { count: 5, bytes: 15000 }, NOW))).toBe(false);
    // Not measured: no bytes limit applies.
    expect(planClean(limits({ max_bytes: 0 }), { count: 5 }, NOW).bytesOver).toBe(0);
  });

  it('the longest run any limit asks for, and nothing newer', () => {
    const plan = planClean(limits({ max_age_days: 4, max_count: 3, max_bytes: 100_000 }), { count: 5, bytes: 15000 }, NOW);
    expect(selected(plan, ids)).toEqual(ids.slice(0, 2));
    const byAge = planClean(limits({ max_age_days: 1.5, max_count: 4 }), { count: 5 }, NOW);
    expect(selected(byAge, ids)).toEqual(ids.slice(0, 3));
  });

  it('never takes a message without a time by age, and a cutoff before 1970 takes nothing', () => {
    const plan = planClean(limits({ max_age_days: 0 }), { count: 1 }, NOW);
    expect(isSelected(plan, { removed: 0, freedBytes: 0 }, idTimeMs('hand-made'))).toBe(false);
    expect(isSelected(planClean(limits({ max_count: 0 }), { count: 1 }, NOW), { removed: 0, freedBytes: 0 }, undefined)).toBe(true);
    expect(planClean(limits({ max_age_days: 1e9 }), { count: 5 }, NOW).cutoffMs).toBeUndefined();
    expect(planRemovesAny(planClean(limits({}), { count: 5, bytes: 1e12 }, NOW))).toBe(false);
  });
});
