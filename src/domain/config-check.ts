/**
 * Checking a config file's values, one way for every file (config/config.json, its
 * `protocols.<name>` sections, a queue's config.json): a valibot schema whose messages
 * say what each field must be, run by `parseConfigValue`, which turns the first problem
 * into an RQ_CONFIG error naming the field by its dotted path
 * (`protocols.cloudq.basicAuth.user`) and the value found there.
 *
 * A schema's message is the `want` of the refusal (`true or false`), except for a strict
 * object's message, which is said of a key the section does not have (`is not a Cloudq
 * key (known: …)`).
 */
import * as v from 'valibot';
import { RqError } from './errors.js';
import { isPlainObject } from './message.js';

/** The first problem of a value, as a refusal names it. */
export interface ConfigProblem {
  /** The field's dotted path, e.g. `protocols.workq.strict`. */
  field: string;
  /** The schema's message: what the field must be, or, for an unknown key, the whole complaint. */
  message: string;
  /** The value found at `field`. */
  got: unknown;
  /** Whether `field` is a key its object does not have. */
  isUnknownKey: boolean;
}

/** config.json's wording: `Bad config file: "<field>" must be <want>, got <value as JSON>`. */
export function badConfigFile(p: ConfigProblem): string {
  if (p.isUnknownKey) return `Bad config file: "${p.field}" ${p.message}`;
  return `Bad config file: "${p.field}" must be ${p.message}, got ${JSON.stringify(p.got)}`;
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
  const keys = (issue.path ?? []).map((item) => (typeof item.key === 'string' || typeof item.key === 'number' ? String(item.key) : '?'));
  const isUnknownKey = issue.type === 'strict_object' && issue.expected === 'never';
  const field = [prefix, ...keys].filter((k) => k !== '').join('.');
  throw new RqError('RQ_CONFIG', say({ field, message: issue.message, got: issue.input, isUnknownKey }));
}

/**
 * `schema` (an object or record schema) for a JSON object only: valibot's objects take
 * arrays too, which no config key means.
 */
export function plainObject<S extends v.GenericSchema<Record<string, unknown>, unknown>>(want: string, schema: S) {
  return v.pipe(v.custom<Record<string, unknown>>(isPlainObject, want), schema);
}
