/**
 * A queue's `config.json` (docs/configuration.md): loading, normalising and the validation of
 * configs given by link. The normalised value is frozen and passed down; nothing re-reads
 * the file except a reload (SIGHUP).
 */
import * as v from 'valibot';
import { inQueueConfig, parseConfigValue } from './config-check.js';
import { RqError } from './errors.js';
import { PROTOCOL_NAMES, type ProtocolName } from './main-config.js';
import { PARAM_KEYS, isPlainObject } from './message.js';
import { checkCleaner, normaliseCleaner, serialisedCleaner, type CleanerConfig } from './retention.js';
import { rubyToI } from './ruby.js';

export interface ScheduleEntry {
  cron: string;
  params: Record<(typeof PARAM_KEYS)[number], unknown>;
  /**
   * Beyond RQ: what a schedule does about due times it missed while the queue was down,
   * paused or stopped. `skip` (RQ's behaviour, the default) or `once` (fire one message
   * for the latest missed time). Any other value is kept so the cron module can name it.
   */
  missed: string;
}

export interface QueueConfig {
  name: string;
  /** Path of the queue script, relative to the install root or absolute. */
  script: string;
  /** Worker slots. RQ's default is 0, so a config without it runs nothing. */
  num_workers: number;
  /** `null` means `bash -lc`; `""` means no prefix (the script is executed directly). */
  exec_prefix: string | null;
  /** Extra environment for the script. Names starting with `RQ_` are ignored. */
  env_vars: Record<string, string>;
  /** Params (1..4) whose equality makes two waiting messages duplicates. */
  coalesce_params: number[];
  /** Params (1..4) whose tuple may have only one message running at a time. */
  blocking_params: number[];
  schedule: ScheduleEntry[];
  /**
   * Beyond RQ: seconds a run may take before its process group gets TERM, then KILL,
   * and the message goes to `err`. `null` (the default) means no limit, as in RQ.
   */
  timeout: number | null;
  /** Beyond RQ: how long done, relayed and err messages are kept (retention.ts). */
  cleaner: CleanerConfig;
  /**
   * Beyond RQ: the pull front door that made the queue (rq-mgr's `create_pull_queue`
   * writes it), shown on the dashboard; null for any other queue, and for a pull queue
   * made before doors were recorded.
   */
  door: ProtocolName | null;
}

/** The checked `timeout`: seconds above 0, or absent or null for none. */
const TIMEOUT = v.nullish(v.pipe(v.number('a positive number of seconds'), v.gtValue(0, 'a positive number of seconds')));

const TRUTHY = new Set<unknown>([true, 'true', 'yes', '1', 1]);

/** Any JSON value as text, as RQ's load leaves it (nothing checks these keys at load): an object becomes "[object Object]". */
function asText(value: unknown): string {
  return String(value);
}

function paramList(value: unknown): number[] {
  return Array.isArray(value) ? value.map(rubyToI) : [];
}

/** A config object's script as every load reads it ('' for none: a pull queue). */
export function scriptOf(raw: Record<string, unknown>): string {
  return asText(raw['script'] ?? '');
}

/** A config object's pull front door, when it names one. */
export function doorOf(raw: Record<string, unknown>): ProtocolName | null {
  return PROTOCOL_NAMES.find((d) => d === raw['door']) ?? null;
}

/** Normalise a parsed config object the way RQ does at every load. */
export function normaliseQueueConfig(raw: Record<string, unknown>): QueueConfig {
  let coalesce = paramList(raw['coalesce_params']);
  if (TRUTHY.has(raw['coalesce'])) {
    coalesce = [1, 2, 3, 4].filter((n) => TRUTHY.has(raw[`coalesce_param${n}`]));
  }
  const schedule: ScheduleEntry[] = [];
  for (const entry of Array.isArray(raw['schedule']) ? raw['schedule'] : []) {
    if (!isPlainObject(entry) || typeof entry['cron'] !== 'string') continue;
    // RQ reads paramN next to `cron`, but writes them under `params` and so loses them on
    // the next load. Both forms are read here; top-level wins.
    const nested = isPlainObject(entry['params']) ? entry['params'] : {};
    const params = Object.fromEntries(PARAM_KEYS.map((k) => [k, entry[k] ?? nested[k] ?? null])) as ScheduleEntry['params'];
    const missed = entry['missed'] === undefined ? 'skip' : asText(entry['missed']);
    schedule.push({ cron: entry['cron'], params, missed });
  }
  const envVars: Record<string, string> = {};
  if (isPlainObject(raw['env_vars'])) {
    for (const [k, v] of Object.entries(raw['env_vars'])) envVars[k] = String(v);
  }
  const timeout = raw['timeout'];
  return Object.freeze({
    name: asText(raw['name'] ?? ''),
    script: scriptOf(raw),
    num_workers: rubyToI(raw['num_workers']),
    exec_prefix: typeof raw['exec_prefix'] === 'string' ? raw['exec_prefix'] : null,
    env_vars: envVars,
    coalesce_params: coalesce,
    blocking_params: paramList(raw['blocking_params']),
    schedule,
    timeout: typeof timeout === 'number' && timeout > 0 ? timeout : null,
    cleaner: normaliseCleaner(raw['cleaner']),
    door: doorOf(raw),
  });
}

/** Parse config.json text and normalise it; a clear RQ_CONFIG error names the file. */
export function parseQueueConfig(text: string, path: string): QueueConfig {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (cause) {
    throw new RqError('RQ_CONFIG', `could not read queue config [ ${path} ]: ${(cause as Error).message}`, { cause });
  }
  if (!isPlainObject(raw)) throw new RqError('RQ_CONFIG', `could not read queue config [ ${path} ]: not a JSON object`);
  parseConfigValue(TIMEOUT, raw['timeout'], 'timeout', inQueueConfig(path));
  checkCleaner(raw['cleaner'], path);
  return normaliseQueueConfig(raw);
}

/**
 * The compact form RQ writes when it creates a queue (key order is part of the contract).
 * A null `exec_prefix` stays null, so a reload keeps running the script with `bash -lc`.
 */
export function serialiseQueueConfig(c: QueueConfig): string {
  const out: Record<string, unknown> = {
    name: c.name,
    script: c.script,
    num_workers: c.num_workers,
    exec_prefix: c.exec_prefix,
    env_vars: c.env_vars,
    coalesce_params: c.coalesce_params,
    blocking_params: c.blocking_params,
    schedule: c.schedule.map((e) => (e.missed === 'skip' ? { cron: e.cron, params: e.params } : e)),
  };
  if (c.timeout !== null) out['timeout'] = c.timeout;
  const cleaner = serialisedCleaner(c.cleaner);
  if (cleaner !== undefined) out['cleaner'] = cleaner;
  if (c.door !== null) out['door'] = c.door;
  return JSON.stringify(out);
}
