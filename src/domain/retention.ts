/**
 * Retention of a queue's finished messages (beyond RQ, whose cleaner knew only an age):
 * the `cleaner` key of a queue's config.json, the override a cleaner message gives, and
 * the one rule that picks what a clean removes. The queue process applies it
 * (queue/housekeeping.ts); the cleaner worker only asks for it.
 *
 * ```json
 * "cleaner": {"max_age_days": 2, "max_count": 60000, "max_bytes": 10737418240,
 *             "err": {"max_age_days": 30}}
 * ```
 *
 * The top-level limits apply to `done` and to `relayed`, each state on its own; `err`,
 * the dead letter an operator must look at, has its own, longer by default. An absent
 * limit takes its default; `null` means no limit of that kind.
 *
 * Where a message's age counts from depends on its state (AGE_FROM). In done and
 * relayed it is the time in its id (ids carry their UTC creation time),
 * as RQ's cleaner aged its hashed directories: cheap, since the ids alone order
 * the state. In err it is the time the message entered err, its directory's ctime
 * (store `enteredAt`, set by the rename into err): a message created weeks ago that
 * fails today is kept the full `err.max_age_days` from today, so someone can see it. A
 * copy of the files (a restore) sets the ctime anew: restored err messages are kept
 * longer, never shorter.
 *
 * The rule: in each state, messages are taken oldest first by that time, while one of
 * the limits is exceeded: the message is older than `max_age_days`, or more than
 * `max_count` would remain, or more than `max_bytes` would remain. Each limit removes a
 * run of the oldest messages, so together they remove the longest of the three runs,
 * and the walk stops at the first message no limit wants.
 */
import * as v from 'valibot';
import { inQueueConfig, parseConfigValue, plainObject } from './config-check.js';
import { RqError } from './errors.js';

/** The states a clean removes messages from. */
export const CLEANED_STATES = ['done', 'relayed', 'err'] as const;
export type CleanedState = (typeof CLEANED_STATES)[number];

/** Where a state's message ages count from (see above): the time in the id, or the time it entered the state. */
export const AGE_FROM: Readonly<Record<CleanedState, 'id' | 'entered'>> = Object.freeze({ done: 'id', relayed: 'id', err: 'entered' });

export interface RetentionLimits {
  /** Messages older than this many days (AGE_FROM) go. `null`: no age limit. */
  max_age_days: number | null;
  /** At most this many messages stay (the newest). `null`: no count limit. */
  max_count: number | null;
  /** At most this many bytes of messages stay (the newest), as disk-usage.ts measures them. `null`: no limit. */
  max_bytes: number | null;
}

/** The normalised `cleaner` key: limits of done and relayed, and err's own. */
export interface CleanerConfig extends RetentionLimits {
  err: RetentionLimits;
}

/** What a clean is asked to do differently this time (the cleaner message's RQ_PARAM2). */
export interface CleanOverride {
  /** Replaces done's and relayed's `max_age_days` (not err's). */
  max_age_days?: number;
}

const DAY_MS = 86_400_000;

/**
 * The defaults: RQ's cleaner kept done and relayed 2 days. err is kept 30 days, long
 * enough for an operator to notice, inspect and clone, and no longer than RQ's
 * retention of its logs would suggest. No count or bytes limit unless configured.
 */
export const CLEANER_DEFAULTS: CleanerConfig = Object.freeze({
  max_age_days: 2,
  max_count: null,
  max_bytes: null,
  err: Object.freeze({ max_age_days: 30, max_count: null, max_bytes: null }),
});

const LIMIT_KEYS = ['max_age_days', 'max_count', 'max_bytes'] as const;

/** Whether a limit's value is valid: days any number >= 0, count and bytes whole numbers >= 0, or null. */
function isLimitValue(key: (typeof LIMIT_KEYS)[number], value: unknown): value is number | null {
  if (value === null) return true;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) return false;
  return key === 'max_age_days' || Number.isInteger(value);
}

const EXPECTED: Record<(typeof LIMIT_KEYS)[number], string> = {
  max_age_days: 'a number of days >= 0, or null for no age limit',
  max_count: 'a whole number of messages >= 0, or null for no count limit',
  max_bytes: 'a whole number of bytes >= 0, or null for no size limit',
};

/** A limit's value: days any number >= 0, count and bytes whole numbers >= 0, or null. */
function limitSchema(key: (typeof LIMIT_KEYS)[number]) {
  const want = EXPECTED[key];
  const whole = key === 'max_age_days' ? v.finite(want) : v.integer(want);
  return v.nullable(v.pipe(v.number(want), whole, v.minValue(0, want)));
}

/**
 * The `cleaner` key's schema. Strict, it refuses the first bad field (and an unknown key);
 * lenient (what every load does), a bad field takes its default and unknown keys are left.
 */
function cleanerSchema(lenient: boolean) {
  const limits = (defaults: RetentionLimits) => {
    const limit = (key: (typeof LIMIT_KEYS)[number]) =>
      lenient ? v.fallback(v.optional(limitSchema(key), defaults[key]), defaults[key]) : v.optional(limitSchema(key), defaults[key]);
    return { max_age_days: limit('max_age_days'), max_count: limit('max_count'), max_bytes: limit('max_bytes') };
  };
  const object = <E extends v.ObjectEntries>(want: string, entries: E) =>
    plainObject(want, lenient ? v.object(entries) : v.strictObject(entries, `(the keys are ${Object.keys(entries).join(', ')})`));
  const errLimits = object('an object such as {"max_age_days": 30}', limits(CLEANER_DEFAULTS.err));
  const cleaner = object('an object such as {"max_age_days": 2}', {
    ...limits(CLEANER_DEFAULTS),
    err: lenient ? v.fallback(v.optional(errLimits, {}), CLEANER_DEFAULTS.err) : v.nullish(errLimits, {}),
  });
  return v.pipe(
    cleaner,
    v.transform(({ err, ...ours }): CleanerConfig => Object.freeze({ ...ours, err: Object.freeze({ ...err }) })),
  );
}

const LENIENT = v.fallback(cleanerSchema(true), CLEANER_DEFAULTS);
/** Absent or null: the defaults. */
const STRICT = v.nullish(cleanerSchema(false));

/** The `cleaner` key normalised as every load does: anything invalid takes its default. */
export function normaliseCleaner(value: unknown): CleanerConfig {
  return v.parse(LENIENT, value);
}

/** The `cleaner` key validated: an RQ_CONFIG error names the file and the field. */
export function checkCleaner(value: unknown, file: string): CleanerConfig {
  return parseConfigValue(STRICT, value, 'cleaner', inQueueConfig(file)) ?? CLEANER_DEFAULTS;
}

/** The `cleaner` key to write in a config.json, or undefined when it is the default. */
export function serialisedCleaner(c: CleanerConfig): CleanerConfig | undefined {
  const same = (a: RetentionLimits, b: RetentionLimits): boolean => LIMIT_KEYS.every((k) => a[k] === b[k]);
  return same(c, CLEANER_DEFAULTS) && same(c.err, CLEANER_DEFAULTS.err) ? undefined : c;
}

/** Each cleaned state's limits for one clean, with the override applied. */
export function limitsByState(c: CleanerConfig, override: CleanOverride): Record<CleanedState, RetentionLimits> {
  const { err, ...ours } = c;
  const finished = override.max_age_days === undefined ? ours : { ...ours, max_age_days: override.max_age_days };
  return { done: finished, relayed: finished, err };
}

/** The argument of the `clean` command: `{"max_age_days": n}` (optional) replaces done's and relayed's age limit. */
export function parseCleanArgument(arg: Record<string, unknown>): CleanOverride {
  const days = arg['max_age_days'];
  if (days === undefined || days === null) return {};
  if (!isLimitValue('max_age_days', days) || days === null) {
    throw new RqError('RQ_BAD_REQUEST', `'max_age_days' must be a number of days >= 0, got ${JSON.stringify(days)}`);
  }
  return { max_age_days: days };
}

/** What one state's clean removes, decided before its walk. */
export interface CleanPlan {
  /** A message whose age counts from before this (epoch ms) is over the age limit; undefined: no age limit. */
  cutoffMs: number | undefined;
  /** The oldest this many go whatever their age: the count over `max_count`. */
  excess: number;
  /** Bytes to free, oldest first: the bytes over `max_bytes`. */
  bytesOver: number;
}

/**
 * The plan for one state holding `count` messages of `bytes` bytes (`bytes` is needed
 * only for a bytes limit; undefined means not measured). An age so long that its
 * cutoff falls before 1970 removes nothing.
 */
export function planClean(limits: RetentionLimits, state: { count: number; bytes?: number }, nowMs: number): CleanPlan {
  const cutoffMs = limits.max_age_days === null ? NaN : nowMs - limits.max_age_days * DAY_MS;
  return {
    cutoffMs: cutoffMs > 0 ? cutoffMs : undefined,
    excess: limits.max_count === null ? 0 : Math.max(0, state.count - limits.max_count),
    bytesOver: limits.max_bytes === null || state.bytes === undefined ? 0 : Math.max(0, state.bytes - limits.max_bytes),
  };
}

/** Whether a plan removes anything at all (else the walk is skipped). */
export function planRemovesAny(plan: CleanPlan): boolean {
  return plan.cutoffMs !== undefined || plan.excess > 0 || plan.bytesOver > 0;
}

/**
 * Whether the next-oldest message goes, its age counting from `sinceMs` (epoch ms), after
 * `removed` messages of `freedBytes` bytes went before it. A message without a time (in
 * done or relayed, an id that is not a short id) is never too old: only the count and
 * bytes limits can take it.
 */
export function isSelected(plan: CleanPlan, progress: { removed: number; freedBytes: number }, sinceMs: number | undefined): boolean {
  return (
    (plan.cutoffMs !== undefined && sinceMs !== undefined && sinceMs < plan.cutoffMs) ||
    progress.removed < plan.excess ||
    progress.freedBytes < plan.bytesOver
  );
}
