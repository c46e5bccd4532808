/**
 * The lmstfy front door's section of config.json, `protocols.lmstfy` (its keys are told
 * in lmstfy.ts), checked once at start: by door-access.ts, which keeps the door's token
 * table for every door, and so apart from the door itself.
 */
import * as v from 'valibot';
import { flag, parseConfigValue, plainObject } from '../domain/config-check.js';
import { protocolSection } from '../domain/main-config.js';
import { isPlainObject } from '../domain/message.js';
import { DEFAULT_POOL, splitPool } from './lmstfy-tokens.js';
import { isNamespace } from './lmstfy-wire.js';

/** The section's keys, checked once at start. */
export interface LmstfyConfig {
  /** Check tokens (false: the reference's dev mode `-sv`). */
  auth: boolean;
  /** config.json's tokens: namespace → tokens (without their `default:` pool). */
  preset: Map<string, Set<string>>;
  /** Basic auth users of the admin routes, or undefined for none. */
  accounts: Record<string, string> | undefined;
  /** Log every /api request from the start (lmstfy-access-log.ts). */
  accessLog: boolean;
}

const TOKENS_WANT = `an array of non-empty tokens, in the pool "${DEFAULT_POOL}" if one is named`;

/** A token of config.json: non-empty, in the default pool if it names one. */
function isPresetToken(t: unknown): t is string {
  if (typeof t !== 'string') return false;
  const { pool, token } = splitPool(t);
  return token !== '' && pool === DEFAULT_POOL;
}

const SECTION = protocolSection(
  {
    tokens: v.nullish(
      plainObject(
        'an object {"<namespace>": ["<token>", ...]}',
        v.pipe(
          v.record(v.string(), v.unknown()),
          v.check((byNamespace) => Object.keys(byNamespace).every(isNamespace), 'keyed by namespaces of 1..255 characters among A-Z a-z 0-9 _ -'),
          v.record(
            v.string(),
            v.pipe(
              v.array(v.unknown(), 'an array of tokens'),
              v.check((list) => list.every(isPresetToken), TOKENS_WANT),
              v.transform((list) => new Set(list.filter(isPresetToken).map((t) => splitPool(t).token))),
            ),
          ),
        ),
      ),
      {},
    ),
    auth: flag(true),
    access_log: flag(false),
    accounts: v.optional(
      v.custom<Record<string, string>>(
        (value) => isPlainObject(value) && Object.values(value).every((p) => typeof p === 'string'),
        'an object {"<user>": "<password>"}',
      ),
    ),
  },
  (keys) => `is not a key of this section (its keys: ${keys})`,
);

/** Check the section's own keys; a bad one is an RQ_CONFIG error naming it. */
export function parseLmstfySection(raw: Record<string, unknown>): LmstfyConfig {
  const { tokens, auth, accounts, access_log: accessLog } = parseConfigValue(SECTION, raw, 'protocols.lmstfy');
  return { auth, preset: new Map(Object.entries(tokens)), accounts, accessLog };
}
