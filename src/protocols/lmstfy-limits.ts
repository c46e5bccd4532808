/**
 * lmstfy's per-token rate limits: the limiters the admin routes set, and
 * the counts they are checked against.
 *
 * A limiter `{"read":n,"write":n,"interval":s}` belongs to one token of one namespace: at
 * most `write` publish or bulk publish requests ("produce") and `read` consume requests
 * ("consume") per window of `interval` seconds; 0 is no limit of that kind. A window opens
 * at the first request counted in it and ends `interval` seconds later, when the next
 * request opens a new one with nothing counted (the reference's counter, which expires).
 * So at the edge of two windows a client may make up to twice the limit in a short time.
 * A request refused with 429 counts for nothing; a request that takes a unit and then
 * fails hands it back (`Refund`). Setting, changing or removing a limiter starts its
 * counts afresh.
 *
 * The limiters live in `config/lmstfy_limits.json`, beside the token file, written whole
 * and durably (tmp, fsync, rename) after every change, owner-only (it names tokens):
 *
 *     {"limits": {"<namespace>": {"<token>": {"read": 2, "write": 2, "interval": 60}}}}
 *
 * The counts are in memory: a restart of the web process starts every window afresh.
 */
import path from 'node:path';
import * as v from 'valibot';
import { RqError } from '../domain/errors.js';
import { isPlainObject } from '../domain/message.js';
import { writeFileDurably } from '../store/atomic.js';
import { SECRET_FILE_MODE } from '../store/secret-files.js';
import { readDoorFile } from './lmstfy-tokens.js';
import { fail, LIMITS, type Reply } from './lmstfy-wire.js';

/** Where the limiters are kept, under the install's config directory. */
export const LIMITS_FILE = 'lmstfy_limits.json';

/** Requests per interval: `read` consumes, `write` publishes (0: no limit), in windows of `interval` seconds. */
export interface Limiter {
  read: number;
  write: number;
  interval: number;
}

/** Which count a request takes from: consume is `read`, publish and bulk publish `write`. */
export type LimitKind = 'read' | 'write';

/** Hands a unit back to the window it was taken from (nothing once that window is over). */
export type Refund = () => void;

/** The units counted in one window of one token and kind. */
interface Window {
  start: number;
  used: number;
}

const WANT = 'the body must be JSON {"read":<n>,"write":<n>,"interval":<seconds>} with whole numbers';
const count = v.optional(v.pipe(v.number(), v.integer(), v.maxValue(LIMITS.uint32)), 0);
/** A limiter as given; a missing count is 0, as in the reference. */
const LIMITER = v.object({ read: count, write: count, interval: count });

/** The limiter in a request body, or the 400 that refuses it. */
export function parseLimiter(body: Buffer): Limiter | Reply {
  let raw: unknown;
  try {
    raw = JSON.parse(body.toString('utf8'));
  } catch {
    return fail(400, `invalid limiter: ${WANT}`);
  }
  const checked = checkLimiter(raw);
  return typeof checked === 'string' ? fail(400, checked) : checked;
}

/** The limiter, or what is wrong with it (a 400's text). */
function checkLimiter(raw: unknown): Limiter | string {
  if (!isPlainObject(raw)) return `invalid limiter: ${WANT}`;
  for (const k of ['read', 'write', 'interval']) {
    const n = raw[k];
    if (typeof n === 'number' && Number.isInteger(n) && n < 0) return k === 'interval' ? 'interval should be > 0' : `${k} should be >= 0`;
  }
  const parsed = v.safeParse(LIMITER, raw);
  if (!parsed.success) return `invalid limiter: ${WANT}`;
  return parsed.output.interval > 0 ? parsed.output : 'interval should be > 0';
}

export class LimitTable {
  private readonly file: string;
  /** `<namespace>/<token>` (a namespace has no `/`) → its limiter. */
  private readonly limiters = new Map<string, Limiter>();
  /** `<namespace>/<token>` → the open window of each kind. */
  private readonly windows = new Map<string, Partial<Record<LimitKind, Window>>>();

  /** Reads the file now; an unreadable or malformed one is an RQ_CONFIG error naming it. */
  constructor(configDir: string) {
    this.file = path.join(configDir, LIMITS_FILE);
    this.load();
  }

  get(namespace: string, token: string): Limiter | undefined {
    return this.limiters.get(key(namespace, token));
  }

  /** Every limiter, with its namespace and token. */
  all(): Array<{ namespace: string; token: string } & Limiter> {
    return [...this.limiters].map(([k, limiter]) => {
      const at = k.indexOf('/');
      return { namespace: k.slice(0, at), token: k.slice(at + 1), ...limiter };
    });
  }

  /** Set a token's limiter; its counts start afresh. Durable before it returns. */
  set(namespace: string, token: string, limiter: Limiter): void {
    this.limiters.set(key(namespace, token), limiter);
    this.windows.delete(key(namespace, token));
    this.save();
  }

  /** Remove a token's limiter; false when it had none. Durable before it returns. */
  remove(namespace: string, token: string): boolean {
    this.windows.delete(key(namespace, token));
    if (!this.limiters.delete(key(namespace, token))) return false;
    this.save();
    return true;
  }

  /**
   * Take one unit of `kind` for a request of this token: 'limited' when its window has
   * none left (nothing taken), else how to hand it back.
   */
  take(namespace: string, token: string, kind: LimitKind, now = Date.now()): Refund | 'limited' {
    const k = key(namespace, token);
    const limit = this.limiters.get(k);
    if (limit === undefined || limit[kind] === 0) return () => undefined;
    const open = this.windows.get(k) ?? {};
    let w = open[kind];
    if (w === undefined || now >= w.start + limit.interval * 1000) {
      w = { start: now, used: 0 };
      open[kind] = w;
      this.windows.set(k, open);
    }
    if (w.used >= limit[kind]) return 'limited';
    w.used++;
    const taken = w;
    return () => {
      if (this.windows.get(k)?.[kind] === taken && taken.used > 0) taken.used--;
    };
  }

  private load(): void {
    const bad = (what: string): RqError => new RqError('RQ_CONFIG', `Bad lmstfy limits file ${this.file}: ${what}`);
    const raw = readDoorFile(this.file, bad);
    if (raw === undefined) return;
    const limits = isPlainObject(raw) ? (raw['limits'] ?? {}) : undefined;
    if (!isPlainObject(limits)) throw bad('expected an object {"limits": {namespace: {token: limiter}}}');
    for (const [ns, byToken] of Object.entries(limits)) {
      if (!isPlainObject(byToken)) throw bad(`"limits.${ns}" must be an object {token: limiter}`);
      for (const [token, limiter] of Object.entries(byToken)) {
        const checked = checkLimiter(limiter);
        if (typeof checked === 'string') throw bad(`a limiter of namespace "${ns}": ${checked}`);
        this.limiters.set(key(ns, token), checked);
      }
    }
  }

  private save(): void {
    const limits: Record<string, Record<string, Limiter>> = {};
    for (const { namespace, token, ...limiter } of this.all()) (limits[namespace] ??= {})[token] = limiter;
    writeFileDurably(this.file, `${JSON.stringify({ limits }, null, 2)}\n`, { mode: SECRET_FILE_MODE });
  }
}

function key(namespace: string, token: string): string {
  return `${namespace}/${token}`;
}
