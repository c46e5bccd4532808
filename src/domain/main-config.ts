/**
 * The install's `config/config.json` (spec/rq.md §1.2). Queue processes read `host`,
 * `port` and `relative_root` from it once, at start-up; rq-mgr and the web process read
 * the rest.
 */
import { RqError } from './errors.js';
import { normaliseRelativeRoot, type HostInfo } from './ids.js';
import { isPlainObject } from './message.js';

export interface MainConfig extends HostInfo {
  env: string | undefined;
  addr: string;
  tmpdir: string | undefined;
  allowNewQueue: boolean;
  raw: Record<string, unknown>;
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
    raw,
  };
}
