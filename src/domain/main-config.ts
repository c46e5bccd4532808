/**
 * The install's `config/config.json` (spec/rq.md §1.2). Queue processes read `host`,
 * `port` and `relative_root` from it once, at start-up; rq-mgr and the web process read
 * the rest. A key with the wrong shape is a clear RQ_CONFIG error naming the key.
 */
import { RqError } from './errors.js';
import { normaliseRelativeRoot, type HostInfo } from './ids.js';
import { isPlainObject } from './message.js';

export interface BasicAuth {
  realm: string;
  users: Record<string, string>;
}

export interface MainConfig extends HostInfo {
  env: string | undefined;
  addr: string;
  tmpdir: string | undefined;
  allowNewQueue: boolean;
  /** HTTP Basic auth on every web route, or undefined for none. */
  basicAuth: BasicAuth | undefined;
  /** Substrings of client addresses allowed to use the web, or undefined for everyone. */
  allowedIps: string[] | undefined;
  raw: Record<string, unknown>;
}

function badKey(key: string, want: string, got: unknown): RqError {
  return new RqError('RQ_CONFIG', `Bad config file: "${key}" must be ${want}, got ${JSON.stringify(got)}`);
}

function parseBasicAuth(v: unknown): BasicAuth | undefined {
  if (v === undefined || v === null) return undefined;
  const want = 'an object {"realm": string, "users": {user: password}}';
  if (!isPlainObject(v) || !isPlainObject(v['users'])) throw badKey('basic_auth', want, v);
  const users = v['users'];
  if (!Object.values(users).every((p) => typeof p === 'string')) throw badKey('basic_auth', want, v);
  return { realm: typeof v['realm'] === 'string' ? v['realm'] : 'rq', users: users as Record<string, string> };
}

function parseAllowedIps(v: unknown): string[] | undefined {
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v) || !v.every((ip) => typeof ip === 'string')) throw badKey('allowed_ips', 'an array of strings', v);
  return v as string[];
}

export function parseMainConfig(text: string): MainConfig {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (cause) {
    throw new RqError('RQ_CONFIG', 'Bad config file', { cause });
  }
  if (!isPlainObject(raw)) throw new RqError('RQ_CONFIG', 'Bad config file');
  const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : typeof v === 'number' ? String(v) : undefined);
  return {
    host: str(raw['host']) ?? '',
    port: str(raw['port']) ?? '8080',
    relativeRoot: normaliseRelativeRoot(raw['relative_root']),
    env: str(raw['env']),
    addr: str(raw['addr']) ?? '127.0.0.1',
    tmpdir: str(raw['tmpdir']),
    allowNewQueue: raw['allow_new_queue'] === true,
    basicAuth: parseBasicAuth(raw['basic_auth']),
    allowedIps: parseAllowedIps(raw['allowed_ips']),
    raw,
  };
}
