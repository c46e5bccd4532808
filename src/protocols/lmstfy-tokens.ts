/**
 * lmstfy's namespace tokens (see docs/doors/lmstfy.md): the
 * tokens of `protocols.lmstfy.tokens` in config.json, merged with the ones the admin
 * routes mint, which live in `config/lmstfy_tokens.json` so that they outlive the web
 * process. That file is this module's alone; it is written whole, durably (tmp, fsync,
 * rename, fsync of the directory), after every change:
 *
 *     {"tokens": {"<namespace>": {"<token>": "<description>"}},
 *      "revoked": {"<namespace>": ["<config token>", ...]}}
 *
 * `revoked` keeps a config token deleted through `DELETE /token/...` deleted across
 * restarts (config.json is the operator's, so it is never rewritten); minting the same
 * token again lifts that. Only the pool `default` exists, so tokens are kept without
 * their `default:` prefix. The file is owner-only (mode 0600), as the tokens are secrets.
 */
import fs from 'node:fs';
import path from 'node:path';
import { errnoCode, RqError } from '../domain/errors.js';
import { isPlainObject } from '../domain/message.js';
import { writeFileDurably } from '../store/atomic.js';
import { SECRET_FILE_MODE } from '../store/secret-files.js';

/** The one pool there is (a token's `<pool>:` prefix defaults to it). */
export const DEFAULT_POOL = 'default';

/** Where the minted tokens are kept, under the install's config directory. */
export const TOKENS_FILE = 'lmstfy_tokens.json';

/** The description `GET /token/:namespace` shows for a token of config.json. */
const CONFIG_DESCRIPTION = 'pre-registered in config.json';

/** `[<pool>:]<token>`, split at the first `:`; an empty pool is the default one. */
export function splitPool(text: string): { pool: string; token: string } {
  const at = text.indexOf(':');
  if (at < 0) return { pool: DEFAULT_POOL, token: text };
  return { pool: text.slice(0, at) || DEFAULT_POOL, token: text.slice(at + 1) };
}

type Table = Map<string, Map<string, string>>;

export class TokenTable {
  private readonly file: string;
  /** config.json's tokens: namespace → tokens. */
  private readonly preset: Map<string, Set<string>>;
  private readonly minted: Table = new Map();
  private readonly revoked = new Map<string, Set<string>>();

  /** Reads the file now; an unreadable or malformed one is an RQ_CONFIG error naming it. */
  constructor(configDir: string, preset: Map<string, Set<string>>) {
    this.file = path.join(configDir, TOKENS_FILE);
    this.preset = preset;
    this.load();
  }

  /** Whether `token` (without its pool) is registered for `namespace`. */
  has(namespace: string, token: string): boolean {
    if (this.minted.get(namespace)?.has(token)) return true;
    return this.preset.get(namespace)?.has(token) === true && this.revoked.get(namespace)?.has(token) !== true;
  }

  /** Whether the namespace has any token at all (config.json's or minted, not revoked). */
  hasAny(namespace: string): boolean {
    if ((this.minted.get(namespace)?.size ?? 0) > 0) return true;
    return [...(this.preset.get(namespace) ?? [])].some((t) => this.has(namespace, t));
  }

  /** Every token of the namespace with its description. */
  list(namespace: string): Record<string, string> {
    const out: Record<string, string> = {};
    for (const t of this.preset.get(namespace) ?? []) if (this.has(namespace, t)) out[t] = CONFIG_DESCRIPTION;
    for (const [t, d] of this.minted.get(namespace) ?? []) out[t] = d;
    return out;
  }

  /** Register a token; false when it is already there. Durable before it returns. */
  add(namespace: string, token: string, description: string): boolean {
    if (this.has(namespace, token)) return false;
    if (this.preset.get(namespace)?.has(token)) this.revoked.get(namespace)?.delete(token);
    else getOrMake(this.minted, namespace, () => new Map<string, string>()).set(token, description);
    this.save();
    return true;
  }

  /** Forget a token (nothing happens for an unknown one). Durable before it returns. */
  remove(namespace: string, token: string): void {
    let changed = this.minted.get(namespace)?.delete(token) === true;
    if (this.preset.get(namespace)?.has(token) && this.revoked.get(namespace)?.has(token) !== true) {
      getOrMake(this.revoked, namespace, () => new Set<string>()).add(token);
      changed = true;
    }
    if (changed) this.save();
  }

  private load(): void {
    const bad = (what: string): RqError => new RqError('RQ_CONFIG', `Bad lmstfy token file ${this.file}: ${what}`);
    const raw = readDoorFile(this.file, bad);
    if (raw === undefined) return;
    if (!isPlainObject(raw)) throw bad('expected an object {"tokens": {...}, "revoked": {...}}');
    const tokens = raw['tokens'] ?? {};
    const revoked = raw['revoked'] ?? {};
    if (!isPlainObject(tokens)) throw bad('"tokens" must be an object {namespace: {token: description}}');
    if (!isPlainObject(revoked)) throw bad('"revoked" must be an object {namespace: [token, ...]}');
    for (const [ns, entries] of Object.entries(tokens)) {
      if (!isPlainObject(entries) || !Object.values(entries).every((d) => typeof d === 'string')) {
        throw bad(`"tokens.${ns}" must be an object {token: description}`);
      }
      this.minted.set(ns, new Map(Object.entries(entries as Record<string, string>)));
    }
    for (const [ns, list] of Object.entries(revoked)) {
      if (!Array.isArray(list) || !list.every((t) => typeof t === 'string')) throw bad(`"revoked.${ns}" must be an array of tokens`);
      this.revoked.set(ns, new Set(list));
    }
  }

  private save(): void {
    const tokens: Record<string, Record<string, string>> = {};
    for (const [ns, m] of this.minted) if (m.size > 0) tokens[ns] = Object.fromEntries(m);
    const revoked: Record<string, string[]> = {};
    for (const [ns, s] of this.revoked) if (s.size > 0) revoked[ns] = [...s];
    writeFileDurably(this.file, `${JSON.stringify({ tokens, revoked }, null, 2)}\n`, { mode: SECRET_FILE_MODE });
  }
}

/**
 * The JSON value of one of the door's files (tokens, limits), or undefined when there is
 * none; an unreadable one is an RQ_CONFIG error naming it, and one that is not JSON `bad`'s.
 */
export function readDoorFile(file: string, bad: (what: string) => RqError): unknown {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    if (errnoCode(e) === 'ENOENT') return undefined;
    throw new RqError('RQ_CONFIG', `cannot read ${file}: ${(e as Error).message}`, { cause: e });
  }
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw bad('it is not JSON');
  }
}

function getOrMake<K, V>(map: Map<K, V>, key: K, make: () => V): V {
  let v = map.get(key);
  if (v === undefined) {
    v = make();
    map.set(key, v);
  }
  return v;
}
