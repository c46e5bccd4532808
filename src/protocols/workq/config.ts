/**
 * The Workq section of config.json (`protocols.workq`), checked once at start: the
 * codec's profile (`strict`, `strictUuidV4`, `strictTtlCap`) and the patterns of the
 * token-protected lmstfy queues this door may touch (`queues`, door-access.ts's). A bad
 * key is an RQ_CONFIG error naming it.
 */
import * as v from 'valibot';
import { flag, parseConfigValue } from '../../domain/config-check.js';
import { protocolSection } from '../../domain/main-config.js';
import { parseQueuePatterns } from '../door-access.js';
import type { WireOptions } from './requests.js';

/** The section, checked: the codec's options, and the patterns of the protected lmstfy queues this door may touch. */
export interface WorkqConfig extends WireOptions {
  /** @default [] */
  queues: RegExp[];
}

/** The section's own keys (`queues` is door-access.ts's). */
const SECTION = protocolSection(
  { strict: flag(false), strictUuidV4: flag(false), strictTtlCap: flag(false), queues: v.optional(v.unknown()) },
  (keys) => `is not a Workq key (known: ${keys})`,
);

/** Check the section's own keys; a bad one is an RQ_CONFIG error naming it. */
export function parseWorkqSection(raw: Record<string, unknown>): WorkqConfig {
  const { strict, strictUuidV4, strictTtlCap, queues } = parseConfigValue(SECTION, raw, 'protocols.workq');
  return { strictUuidV4: strict || strictUuidV4, strictTtlCap: strict || strictTtlCap, queues: parseQueuePatterns('workq', queues) };
}
