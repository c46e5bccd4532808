/**
 * Checking a config file's values, one way for every file (config/config.json, its
 * `protocols.<name>` sections, a queue's config.json): a valibot schema whose messages
 * say what each field must be, run by `parseConfigValue`, which turns the first problem
 * into an RQ_CONFIG error naming the field by its dotted path
 * (`protocols.cloudq.basicAuth.user`) and the value found there.
 *
 * A schema's message is the `want` of the refusal (`true or false`), except for an
 * object's own message, which is said of a key the object does not have (`is not a
 * Cloudq key (known: …)`); a key an object needs and lacks is said to be missing.
 */
import * as v from 'valibot';
import { RqError } from './errors.js';
import { issueKeys } from './input-check.js';
import { isPlainObject } from './message.js';

/** The first problem of a value, as a refusal names it. */
export interface ConfigProblem {
  /** The field's dotted path, e.g. `protocols.workq.strict`. */
  field: string;
  /** What is wrong: the value (`message` says what it must be), the key (`message` says it all), or its absence. */
  kind: 'value' | 'unknown key' | 'missing';
  message: string;
  /** The value found at `field`. */
  got: unknown;
}

/** config.json's wording: `Bad config file: "<field>" must be <want>, got <value as JSON>`. */
export function badConfigFile(p: ConfigProblem): string {
  if (p.kind === 'unknown key') return `Bad config file: "${p.field}" ${p.message}`;
  if (p.kind === 'missing') return `Bad config file: "${p.field}" is missing`;
  return `Bad config file: "${p.field}" must be ${p.message}, got ${JSON.stringify(p.got)}`;
}

/**
 * A queue config's wording: `<file>: expected "<field>" to be <want>, got <value as JSON>`,
 * and `<file>: unknown key "<field>" <message>`.
 */
export function inQueueConfig(file: string): (p: ConfigProblem) => string {
  return (p) => (p.kind === 'value' ? `${file}: expected "${p.field}" to be ${p.message}, got ${JSON.stringify(p.got)}` : `${file}: unknown key "${p.field}" ${p.message}`);
}

/**
 * `value` (the field `prefix`, '' for a whole file) checked and shaped by `schema`; an
 * RQ_CONFIG error worded by `say` names the first field that does not fit.
 */
export function parseConfigValue<S extends v.GenericSchema>(
  schema: S,
  value: unknown,
  prefix: string,
  say: (p: ConfigProblem) => string = badConfigFile,
): v.InferOutput<S> {
  const result = v.safeParse(schema, value, { abortEarly: true });
  if (result.success) return result.output;
  const issue = result.issues[0];
  const keys = issueKeys(issue);
  // An object schema's own issue about one of its keys: a key it does not have (expected
  // `never`), or one it needs and lacks (expected `"<key>"`, input undefined).
  const isObjectsOwn = issue.kind === 'schema' && /object$/.test(issue.type);
  const kind =
    isObjectsOwn && issue.expected === 'never' ? 'unknown key' : isObjectsOwn && issue.input === undefined && issue.expected?.startsWith('"') ? 'missing' : 'value';
  const field = [prefix, ...keys].filter((k) => k !== '').join('.');
  throw new RqError('RQ_CONFIG', say({ field, kind, message: issue.message, got: issue.input }));
}

/**
 * `schema` (an object or record schema) for a JSON object only: valibot's objects take
 * arrays too, which no config key means.
 */
export function plainObject<S extends v.GenericSchema<Record<string, unknown>, unknown>>(want: string, schema: S) {
  return v.pipe(v.custom<Record<string, unknown>>(isPlainObject, want), schema);
}

/** `true` or `false`; absent or null is `fallback`. */
export function flag(fallback: boolean) {
  return v.nullish(v.boolean('true or false'), fallback);
}

/** An integer from `min` to `max`, `want` naming what it counts. */
export function integerIn(min: number, max: number, want: string) {
  return v.pipe(v.number(want), v.integer(want), v.minValue(min, want), v.maxValue(max, want));
}
