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
  /**
   * Host names (without port) a browser may call this install by, besides `localhost`,
   * `127.0.0.1`, `[::1]`, `host` and `addr` (`allowed_hosts`). @default []
   */
  allowedHosts: string[];
  /**
   * Directories (absolute, or relative to the install root) whose scripts a queue created
   * over HTTP may run, besides the install root itself (`script_dirs`). @default []
   */
  scriptDirs: string[];
  /**
   * The `exec_prefix` values a queue created over HTTP may have (`exec_prefixes`); a null
   * `exec_prefix` counts as `bash -lc`. @default ["", "bash -lc"]
   */
  execPrefixes: string[];
  /**
   * The `env_vars` names a queue created over HTTP may set (`web_env_vars`): patterns,
   * `*` for any run of characters. The names of create-policy.ts's ENV_RULES stay refused
   * whatever it says. @default ["RQ*"] (rq's own namespace, which no other program reads)
   */
  webEnvVars: string[];
  /** The pull front doors to serve (absent = off), each with its own section's keys. */
  protocols: Partial<Record<ProtocolName, ProtocolSection>>;
  raw: Record<string, unknown>;
}

export const PROTOCOL_NAMES = ['lmstfy', 'cloudq', 'rqms', 'workq'] as const;
export type ProtocolName = (typeof PROTOCOL_NAMES)[number];

/** A `protocols.<name>` section: where it listens, and the protocol's own keys (its module checks them). */
export interface ProtocolSection {
  port: number;
  /** Default 127.0.0.1. */
  addr: string;
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

function parseStrings(key: string, v: unknown, fallback: string[]): string[] {
  if (v === undefined || v === null) return fallback;
  if (!Array.isArray(v) || !v.every((s) => typeof s === 'string')) throw badKey(key, 'an array of strings', v);
  return v as string[];
}

function parseProtocols(v: unknown): Partial<Record<ProtocolName, ProtocolSection>> {
  if (v === undefined || v === null) return {};
  if (!isPlainObject(v)) throw badKey('protocols', `an object with keys among ${PROTOCOL_NAMES.join(', ')}`, v);
  const out: Partial<Record<ProtocolName, ProtocolSection>> = {};
  for (const [name, section] of Object.entries(v)) {
    if (!(PROTOCOL_NAMES as readonly string[]).includes(name)) throw badKey('protocols', `an object with keys among ${PROTOCOL_NAMES.join(', ')}`, v);
    const key = `protocols.${name}`;
    if (!isPlainObject(section)) throw badKey(key, 'an object {"port": number, "addr"?: string, ...}', section);
    const port = section['port'];
    if (typeof port !== 'number' || !Number.isInteger(port) || port < 0 || port > 65535) throw badKey(`${key}.port`, 'an integer 0..65535', port);
    const addr = section['addr'] ?? '127.0.0.1';
    if (typeof addr !== 'string' || addr === '') throw badKey(`${key}.addr`, 'an address to listen on', addr);
    out[name as ProtocolName] = { port, addr, raw: section };
  }
  return out;
}

/** The unspecified addresses (listen on every interface), as `addr` may give them. */
const UNSPECIFIED = new Set(['0.0.0.0', '::', '[::]']);

/**
 * The host names a browser may call this install's listeners by: `localhost`,
 * `127.0.0.1`, `[::1]`, `host`, `addr` and `allowed_hosts`, plus `addrs` (a front door's
 * own address). Lower case, without port, an IPv6 address in brackets, as in a Host header.
 */
export function browserHostNames(config: MainConfig, ...addrs: string[]): ReadonlySet<string> {
  const names = ['localhost', '127.0.0.1', '[::1]', config.host, config.addr, ...config.allowedHosts, ...addrs];
  // An address that means "every interface" names no server: a browser takes 0.0.0.0 for this host.
  const named = names.filter((n) => n !== '' && !UNSPECIFIED.has(n));
  return new Set(named.map((n) => (n.includes(':') && !n.startsWith('[') ? `[${n}]` : n).toLowerCase()));
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
    allowedIps: raw['allowed_ips'] === undefined || raw['allowed_ips'] === null ? undefined : parseStrings('allowed_ips', raw['allowed_ips'], []),
    allowedHosts: parseStrings('allowed_hosts', raw['allowed_hosts'], []),
    scriptDirs: parseStrings('script_dirs', raw['script_dirs'], []),
    execPrefixes: parseStrings('exec_prefixes', raw['exec_prefixes'], ['', 'bash -lc']),
    webEnvVars: parseStrings('web_env_vars', raw['web_env_vars'], ['RQ*']),
    protocols: parseProtocols(raw['protocols']),
    raw,
  };
}
