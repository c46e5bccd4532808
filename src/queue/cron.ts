/**
 * Cron schedules (docs/cron.md): one queue's `schedule` entries, when each fires next,
 * and the record of when each last fired.
 *
 * RQ's rule is kept: while the queue is UP, an entry whose next time is less than 60 s
 * away creates a message `{param1..4, dest, src: "cron", due: <that time>}`, so it waits in
 * `que` and starts on the minute. Beyond RQ:
 * - Each entry is tracked on its own (RQ kept one `last_scheduled` per queue), and the
 *   last fired time of each is kept on disk (`cron.json` in the queue directory), so a
 *   due time fires once even across restarts. A fire makes its message in `prep`,
 *   records the fire with that message's id as `pending`, then commits it; the next
 *   check (also the first after a restart) commits a recorded message still in prep. A
 *   crash can so neither lose a recorded fire nor repeat one; a crash before the record
 *   leaves an uncommitted message in `prep` and the fire is made again.
 * - `missed: "once"` fires one message (due now) for the latest due time missed while
 *   the queue was stopped, down or paused; `"skip"` (the default) does as RQ does.
 * - Times are wall-clock minutes in the local time zone. A wall-clock minute fires at
 *   most once: in the hour repeated when clocks go back it fires the first time only.
 *   A minute that does not exist when clocks go forward fires at the same wall time
 *   shifted by the jump (02:30 → 03:30), never skipped.
 * - A bad entry (cron syntax, `@reboot`, a seconds field, an unknown `missed`) is logged
 *   with the queue and the entry, shown on the queue page, and skipped; the rest of the
 *   queue keeps working.
 *
 * Wall times are handled as "local time written as if it were UTC" milliseconds: cron
 * matching runs on those in UTC, where no minute repeats or vanishes, and only the
 * conversions to and from real instants know the zone.
 */
import fs from 'node:fs';
import { createRequire } from 'node:module';
import type { CronExpression, CronExpressionParser } from 'cron-parser';
import { RqError, coerceError } from '../domain/errors.js';
import type { ScheduleEntry } from '../domain/queue-config.js';
import type { Logger } from '../lib/logger.js';
import { writeFileDurably } from '../store/atomic.js';

/** A schedule entry as the queue's `stats` reply shows it (epoch seconds, or null). */
export interface ScheduleStatus extends ScheduleEntry {
  next: number | null;
  last: number | null;
  error?: string;
}

/** The window before a due time in which its message is created: up to a minute early, as in RQ. */
const WINDOW_MS = 60_000;
/** Timers never wait longer than this, so a changed system clock is noticed. */
const MAX_WAIT_MS = 60_000;
/** Longer than any daylight-saving jump. */
const LOOKBACK_MS = 2 * 3_600_000;
/** The wait while the queue is not UP or after a failed fire (RQ's loop waits 5 s). */
const RETRY_MS = 5_000;
const ALIASES = new Set(['@yearly', '@annually', '@monthly', '@weekly', '@daily', '@midnight', '@hourly']);

// ───────────────────────────── wall-clock time ─────────────────────────────

const formatters = new Map<string, Intl.DateTimeFormat>();

/** The wall-clock time at instant `at` in zone `tz`, as UTC-written milliseconds. */
export function wallOf(at: number, tz: string): number {
  let f = formatters.get(tz);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: tz,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formatters.set(tz, f);
  }
  const p: Record<string, number> = {};
  for (const part of f.formatToParts(at)) if (part.type !== 'literal') p[part.type] = Number(part.value);
  const ms = ((at % 1000) + 1000) % 1000;
  return Date.UTC(p['year'] ?? 0, (p['month'] ?? 1) - 1, p['day'] ?? 1, p['hour'] ?? 0, p['minute'] ?? 0, p['second'] ?? 0, ms);
}

/**
 * The instant of a wall-clock time: the earlier one when the time occurs twice, and for a
 * time that does not occur (clocks went forward) the wall time shifted by the jump.
 */
export function instantOf(wall: number, tz: string): number {
  const DAY = 86_400_000;
  const before = wallOf(wall - DAY, tz) - (wall - DAY);
  const after = wallOf(wall + DAY, tz) - (wall + DAY);
  const candidates = [wall - before, wall - after].filter((at) => wallOf(at, tz) === wall);
  return candidates.length > 0 ? Math.min(...candidates) : wall - before;
}

// ───────────────────────────── entries ─────────────────────────────

/** Parse an entry's cron text (5 fields or an alias); the error names what is wrong. */
/** cron-parser (and its time library), loaded at the first schedule: most queues have none, and it costs megabytes. */
let parser: typeof CronExpressionParser | undefined;
function cronParser(): typeof CronExpressionParser {
  parser ??= (createRequire(import.meta.url)('cron-parser') as { CronExpressionParser: typeof CronExpressionParser }).CronExpressionParser;
  return parser;
}

export function compileCron(text: string): CronExpression {
  const trimmed = text.trim();
  if (trimmed.startsWith('@')) {
    if (!ALIASES.has(trimmed)) throw new Error(`unknown alias ${trimmed} (use one of ${[...ALIASES].join(' ')})`);
  } else if (trimmed.split(/\s+/).length !== 5) {
    throw new Error('expected 5 fields: minute hour day-of-month month day-of-week');
  }
  // cron-parser lacks @midnight, which is @daily.
  return cronParser().parse(trimmed === '@midnight' ? '@daily' : trimmed, { tz: 'UTC', currentDate: new Date(0) });
}

/** The first wall-clock minute matching `expr` strictly after wall time `after`. */
export function nextWall(expr: CronExpression, after: number): number {
  expr.reset(new Date(after));
  return expr.next().getTime();
}

/** The latest wall-clock minute matching `expr` at or before wall time `at`. */
function prevWall(expr: CronExpression, at: number): number {
  expr.reset(new Date(at + 1));
  return expr.prev().getTime();
}

/** What makes an entry the same entry across restarts and reloads. */
function entryKey(e: ScheduleEntry): string {
  return `${e.cron} ${JSON.stringify(e.params)}`;
}

interface LiveEntry {
  entry: ScheduleEntry;
  key: string;
  expr?: CronExpression;
  error?: string;
}

/** What the schedule needs from its queue. */
export interface CronDeps {
  queue: string;
  /** `cron.json` in the queue directory. */
  file: string;
  log: Logger;
  /** Whether the queue's combined status is UP. */
  isUp(): boolean;
  /** Create a message in `prep`; its short id. */
  prep(input: Record<string, unknown>): Promise<string>;
  commit(shortId: string): Promise<void>;
  /** Time zone for the wall clock (default: the system's). */
  tz?: string;
  now?: () => number;
}

/**
 * A fired entry on disk: the wall time it fired for (UTC-written ms), that instant, and
 * the id of the message made for it, committed or not.
 */
interface Fired {
  wall: number;
  at: number;
  pending?: string;
}

function isFired(v: unknown): v is Fired {
  if (v === null || typeof v !== 'object') return false;
  const f = v as Record<string, unknown>;
  return Number.isFinite(f['wall']) && Number.isFinite(f['at']) && (f['pending'] === undefined || typeof f['pending'] === 'string');
}

/** The system's time zone, once asked. */
let systemTimeZone: string | undefined;

export class CronSchedule {
  private entries: LiveEntry[] = [];
  private fires: Record<string, Fired> | undefined;
  /** Pending ids known to be committed (cleared with each new record). */
  private readonly committed = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  /** The fire in progress, if any (one at a time). */
  private firing: Promise<void> | undefined;
  private started = false;
  /** The last fire failed (disk full, say): wait before trying again. */
  private failed = false;
  private readonly now: () => number;
  private readonly d: CronDeps;

  constructor(d: CronDeps) {
    this.d = d;
    this.now = d.now ?? Date.now;
  }

  /** The wall clock's time zone: the system's unless given (asked once per process: it costs). */
  private get tz(): string {
    return this.d.tz ?? (systemTimeZone ??= Intl.DateTimeFormat().resolvedOptions().timeZone);
  }

  /** The record of fires, read from its file at first use (a queue without a schedule never reads it). */
  private get fired(): Record<string, Fired> {
    if (this.fires) return this.fires;
    const d = this.d;
    const fires: Record<string, Fired> = (this.fires = {});
    try {
      const raw = JSON.parse(fs.readFileSync(d.file, 'utf8')) as unknown;
      for (const [key, value] of Object.entries(raw !== null && typeof raw === 'object' ? raw : {})) {
        if (isFired(value)) fires[key] = value;
        else d.log.warn({ file: d.file, key }, 'malformed cron record dropped; that entry starts afresh');
      }
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') {
        d.log.warn({ file: d.file, err: coerceError(e).message }, 'cannot read the cron record; schedules start afresh');
      }
    }
    return fires;
  }

  /** Take a (re)loaded config's entries; bad ones are logged and skipped. */
  configure(schedule: readonly ScheduleEntry[]): void {
    this.entries = schedule.map((entry, i) => {
      const live: LiveEntry = { entry, key: entryKey(entry) };
      try {
        if (entry.missed !== 'skip' && entry.missed !== 'once') {
          throw new Error(`"missed" must be "skip" or "once", not ${JSON.stringify(entry.missed)}`);
        }
        live.expr = compileCron(entry.cron);
      } catch (e) {
        live.error = `schedule entry ${i + 1} (${JSON.stringify(entry.cron)}): ${coerceError(e).message}`;
        this.d.log.error({ entry: i + 1, cron: entry.cron, err: live.error }, 'invalid schedule entry skipped');
      }
      return live;
    });
    if (this.started) void this.check();
  }

  /**
   * Start firing. The first check commits the messages of fires recorded but cut short
   * before their commit (the record's `pending` id; one already committed is skipped).
   */
  async start(): Promise<void> {
    this.started = true;
    await this.check();
  }

  /** Fire no more (the queue is closed); a fire under way ends on its own. */
  stop(): void {
    this.started = false;
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** Look again now (status or config changed); settles when the due fires are made. */
  check(): Promise<void> {
    if (!this.started) return Promise.resolve();
    if (this.firing) return this.firing;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.failed = false;
    this.firing = this.fireDue()
      .catch((e: unknown) => {
        this.failed = true;
        this.d.log.error({ err: coerceError(e).message }, 'cron fire failed; retrying in 5 s');
      })
      .finally(() => {
        this.firing = undefined;
        this.arm();
      });
    return this.firing;
  }

  /** Each entry with its next and last fire times (epoch seconds), for `stats`. */
  describe(): ScheduleStatus[] {
    const now = this.now();
    return this.entries.map((l) => {
      const last = this.fired[l.key];
      const next = l.expr ? this.nextFire(l.key, l.expr, now).at : null;
      return {
        ...l.entry,
        next: next === null ? null : Math.round(next / 1000),
        last: last ? Math.round(last.at / 1000) : null,
        ...(l.error !== undefined ? { error: l.error } : {}),
      };
    });
  }

  /**
   * The next due time of an entry: the first matching wall minute after its last fire
   * whose instant is after now and after that fire. The search starts where the wall
   * clock stood 2 h ago plus 2 h, which is now except just after clocks went forward:
   * then the skipped minutes, whose instants are still ahead, are searched too. Two wall
   * minutes of a skipped hour share an instant; only the first fires.
   */
  private nextFire(key: string, expr: CronExpression, now: number): Fired {
    const last = this.fired[key];
    const from = Math.min(wallOf(now, this.tz), wallOf(now - LOOKBACK_MS, this.tz) + LOOKBACK_MS);
    const after = Math.max(now, last?.at ?? -Infinity);
    let wall = nextWall(expr, Math.max(from, last?.wall ?? -Infinity));
    while (instantOf(wall, this.tz) <= after) wall = nextWall(expr, wall);
    return { wall, at: instantOf(wall, this.tz) };
  }

  private async fireDue(): Promise<void> {
    for (const l of this.entries) await this.commitPending(l.key);
    if (!this.d.isUp()) return;
    for (const l of this.entries) {
      if (!l.expr) continue;
      const now = this.now();
      const last = this.fired[l.key];
      if (l.entry.missed === 'once' && last) {
        // The latest due time already past (on the day clocks go forward, a wall time
        // ahead of now may map to an instant ahead of now: not missed yet).
        const missed = prevWall(l.expr, wallOf(now, this.tz));
        const missedAt = instantOf(missed, this.tz);
        if (missed > last.wall && missedAt <= now) await this.fire(l, { wall: missed, at: missedAt }, now);
      }
      const next = this.nextFire(l.key, l.expr, now);
      if (next.at - now < WINDOW_MS) await this.fire(l, next, next.at);
    }
  }

  /**
   * Make the message in prep, record the fire with the message's id as `pending`, then
   * commit. A crash before the record leaves an uncommitted message in prep and the due
   * time unfired (it fires again); after the record, the next check commits `pending`.
   */
  private async fire(l: LiveEntry, due: Fired, dueAt: number): Promise<void> {
    const input = { ...l.entry.params, dest: this.d.queue, src: 'cron', due: Math.floor(dueAt / 1000) };
    const id = await this.d.prep(input);
    this.record(l.key, { ...due, pending: id });
    await this.commitPending(l.key);
    this.d.log.info({ msg_id: id, cron: l.entry.cron, due: input.due }, 'cron message queued');
  }

  /** Commit an entry's recorded message if that has not happened yet (a failure throws: retried). */
  private async commitPending(key: string): Promise<void> {
    const fired = this.fired[key];
    if (fired?.pending === undefined || this.committed.has(fired.pending)) return;
    try {
      await this.d.commit(fired.pending);
    } catch (e) {
      // Committed before a restart, or deleted from prep by an operator: nothing to do.
      if (!(e instanceof RqError && e.code === 'RQ_NOT_IN_STATE')) throw e;
    }
    this.committed.add(fired.pending);
  }

  /** Record a fire durably; memory changes only once the file is written. */
  private record(key: string, fired: Fired): void {
    const live = new Set(this.entries.map((l) => l.key));
    const next: Record<string, Fired> = { [key]: fired };
    for (const [k, v] of Object.entries(this.fired)) if (k !== key && live.has(k)) next[k] = v;
    writeFileDurably(this.d.file, `${JSON.stringify(next)}\n`);
    this.fires = next;
    const pending = new Set(Object.values(next).map((f) => f.pending));
    for (const id of this.committed) if (!pending.has(id)) this.committed.delete(id);
  }

  private arm(): void {
    if (this.timer) clearTimeout(this.timer);
    if (this.entries.every((l) => !l.expr)) return;
    const now = this.now();
    let wait = MAX_WAIT_MS;
    if (this.failed || !this.d.isUp()) wait = RETRY_MS;
    else for (const l of this.entries) if (l.expr) wait = Math.min(wait, this.nextFire(l.key, l.expr, now).at - WINDOW_MS - now);
    this.timer = setTimeout(() => void this.check(), Math.max(wait, 0) + 10);
    this.timer.unref();
  }
}
