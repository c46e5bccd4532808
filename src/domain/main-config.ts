/**
 * The install's `config/config.json` (docs/configuration.md). Queue processes read `host`,
 * `port` and `relative_root` from it once, at start-up; rq-mgr and the web process read
 * the rest. A key with the wrong shape is a clear RQ_CONFIG error naming the key.
 */
import * as v from 'valibot';
import { integerIn, parseConfigValue, plainObject } from './config-check.js';
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

const PROTOCOLS_WANT = `an object with keys among ${PROTOCOL_NAMES.join(', ')}`;

/** A list of strings; absent or null is `fallback`. */
const strings = (fallback: string[]) => v.nullish(v.array(v.string('a string'), 'an array of strings'), () => [...fallback]);

/** `basic_auth`: a realm (else `rq`) and the users' passwords; absent or null is none. */
const BASIC_AUTH = v.nullish(
  plainObject(
    'an object {"realm": string, "users": {user: password}}',
    v.object({
      realm: v.fallback(v.string(), 'rq'),
      users: plainObject('an object {user: password}', v.record(v.string(), v.string('a password (a string)'))),
    }),
  ),
);

/** A `protocols.<name>` section: its port and address, and all its keys in `raw` (the protocol's module checks its own). */
const SECTION = plainObject(
  'an object {"port": number, "addr"?: string, ...}',
  v.pipe(
    v.looseObject({
      port: integerIn(0, 65535, 'an integer 0..65535'),
      addr: v.nullish(v.pipe(v.string('an address to listen on'), v.nonEmpty('an address to listen on')), '127.0.0.1'),
    }),
    v.transform((raw): ProtocolSection => ({ port: raw.port, addr: raw.addr, raw })),
  ),
);

/**
 * The schema of a `protocols.<name>` section's own keys, `entries`, for its module; `port`
 * and `addr` (checked here) may be there too, any other key is refused with the text
 * `notAKey` makes of the list of the section's keys.
 */
export function protocolSection<E extends v.ObjectEntries>(entries: E, notAKey: (keys: string) => string) {
  const all = { port: v.optional(v.unknown()), addr: v.optional(v.unknown()), ...entries };
  return v.strictObject(all, notAKey(Object.keys(all).join(', ')));
}

/** The `protocols` key: sections named among PROTOCOL_NAMES only; absent or null is none. */
const PROTOCOLS = v.nullish(
  plainObject(
    PROTOCOLS_WANT,
    v.pipe(
      v.record(v.string(), v.unknown()),
      v.check((sections) => Object.keys(sections).every((name) => (PROTOCOL_NAMES as readonly string[]).includes(name)), PROTOCOLS_WANT),
      v.record(v.string(), SECTION),
    ),
  ),
  {},
);

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
    basicAuth: parseConfigValue(BASIC_AUTH, raw['basic_auth'], 'basic_auth') ?? undefined,
    allowedIps: raw['allowed_ips'] === undefined || raw['allowed_ips'] === null ? undefined : parseConfigValue(strings([]), raw['allowed_ips'], 'allowed_ips'),
    allowedHosts: parseConfigValue(strings([]), raw['allowed_hosts'], 'allowed_hosts'),
    scriptDirs: parseConfigValue(strings([]), raw['script_dirs'], 'script_dirs'),
    execPrefixes: parseConfigValue(strings(['', 'bash -lc']), raw['exec_prefixes'], 'exec_prefixes'),
    webEnvVars: parseConfigValue(strings(['RQ*']), raw['web_env_vars'], 'web_env_vars'),
    protocols: parseConfigValue(PROTOCOLS, raw['protocols'], 'protocols'),
    raw,
  };
}
