/**
 * The argument schemas of the queue's commands (valibot), field by field, with the
 * refusal texts RQ's clients and the front doors rely on: each names its field and
 * shows the value it got (`'offset' must be an integer >= 0, got -1`). A field that is
 * absent or null is undefined. `parseArg` checks an argument against a command's schema
 * and throws the first refusal as RQ_BAD_REQUEST.
 */
import * as v from 'valibot';
import { checkInput } from '../domain/input-check.js';
import { RqError } from '../domain/errors.js';
import { parseFullId } from '../domain/ids.js';
import { attributesProblem, isPlainObject } from '../domain/message.js';

/** The longest external id, in bytes (RQMS allows 1024). */
const MAX_EXT_ID_BYTES = 1024;
/** The longest delay, TTL or TTR: lmstfy's uint32 seconds (136 years). */
const MAX_MS = 4_294_967_295_000;
/** The range of an instant (epoch ms): JavaScript's Date. */
const MAX_INSTANT = 8.64e15;

/** A command's argument schema: a JSON object in, the typed argument out. */
export type ArgSchema<A> = v.GenericSchema<unknown, A>;

/** `arg` checked against `schema`; the first refusal is thrown as RQ_BAD_REQUEST. */
export function parseArg<A>(schema: ArgSchema<A>, arg: Record<string, unknown>): A {
  const r = checkInput(schema, arg);
  if (!r.ok) throw new RqError('RQ_BAD_REQUEST', r.problem.message);
  return r.value;
}

const shown = (issue: { input: unknown }): string => JSON.stringify(issue.input);

/**
 * Absent or null → undefined, else `schema`. (The default makes the checks after it run
 * for an absent key too, so `required` can refuse it.)
 */
function opt<T>(schema: v.GenericSchema<unknown, T>): v.GenericSchema<unknown, T | undefined> {
  return v.pipe(
    v.nullish(schema, () => undefined),
    v.transform((x) => x ?? undefined),
  );
}

/** Any value of a key, absent (undefined) too, so the checks after it always run. */
export const anyValue = v.optional(v.unknown(), () => undefined);

/** An optional number, in a range, maybe whole. */
export function optNumber(key: string, o: { min?: number; max?: number; integer?: boolean } = {}): v.GenericSchema<unknown, number | undefined> {
  const range = `${o.min !== undefined ? ` >= ${o.min}` : ''}${o.max !== undefined ? ` and <= ${o.max}` : ''}`;
  const text = (issue: { input: unknown }): string => `'${key}' must be ${o.integer ? 'an integer' : 'a number'}${range}, got ${shown(issue)}`;
  return opt(
    v.pipe(
      v.number(text),
      v.check((n) => Number.isFinite(n) && (!o.integer || Number.isInteger(n)) && (o.min === undefined || n >= o.min) && (o.max === undefined || n <= o.max), text),
    ),
  );
}

/** An optional count (`offset`, `limit` of the web's reads): an integer >= 0. */
export function optCount(key: string): v.GenericSchema<unknown, number | undefined> {
  return optNumber(key, { min: 0, integer: true });
}

/** An optional duration in ms: 0..MAX_MS. */
export const optMs = (key: string): v.GenericSchema<unknown, number | undefined> => optNumber(key, { min: 0, max: MAX_MS });

/** An optional instant (epoch ms). */
export const optInstant = (key: string): v.GenericSchema<unknown, number | undefined> => optNumber(key, { min: -MAX_INSTANT, max: MAX_INSTANT });

export function optString(key: string): v.GenericSchema<unknown, string | undefined> {
  return opt(v.string((issue) => `'${key}' must be a string, got ${shown(issue)}`));
}

export function optBoolean(key: string): v.GenericSchema<unknown, boolean | undefined> {
  return opt(v.boolean((issue) => `'${key}' must be true or false, got ${shown(issue)}`));
}

/** An optional external id: 1 to MAX_EXT_ID_BYTES bytes. */
export function optExtId(key = 'ext_id'): v.GenericSchema<unknown, string | undefined> {
  return opt(
    v.pipe(
      v.string((issue) => `'${key}' must be a string, got ${shown(issue)}`),
      v.check((x) => x !== '' && Buffer.byteLength(x) <= MAX_EXT_ID_BYTES, `'${key}' must be 1 to ${MAX_EXT_ID_BYTES} bytes`),
    ),
  );
}

/** Optional base64 text, decoded. */
export function optBase64(key: string): v.GenericSchema<unknown, Buffer | undefined> {
  return opt(
    v.pipe(
      v.string((issue) => `'${key}' must be a string, got ${shown(issue)}`),
      v.regex(/^[A-Za-z0-9+/]*={0,2}$/, `'${key}' must be base64`),
      v.transform((text) => Buffer.from(text, 'base64')),
    ),
  );
}

/** Optional attributes (domain/message.ts): an object of strings within ATTRIBUTE_LIMITS; an empty one is undefined. */
export function optAttributes(key: string): v.GenericSchema<unknown, Record<string, string> | undefined> {
  const text = (issue: { input: unknown }): string => `'${key}' must be an object of strings, got ${shown(issue)}`;
  return opt(
    v.pipe(
      // Checked as it came: valibot's record() would drop the names `__proto__`, `constructor` and `prototype`.
      v.custom<Record<string, string>>((x) => isPlainObject(x) && Object.values(x).every((value) => typeof value === 'string'), text),
      v.check((x) => attributesProblem(x) === undefined, (issue) => `'${key}': ${attributesProblem(issue.input) ?? ''}`),
      v.transform((x) => (Object.keys(x).length === 0 ? undefined : x)),
    ),
  );
}

/** A required value (any but absent or null), `lacking '<key>' field` otherwise. */
export function required<T>(key: string, schema: v.GenericSchema<unknown, T | undefined>, lacking = `lacking '${key}' field`): v.GenericSchema<unknown, T> {
  return v.pipe(
    schema,
    v.check((x) => x !== undefined, lacking),
    v.transform((x) => x as T),
  );
}

/** `ref`: an external id or a message id. */
export const ref = (): v.GenericSchema<unknown, string> => required('ref', optExtId('ref'), "lacking 'ref' field (an external id or a message id)");

/** One of `values`, as given (absent or null: undefined). */
export function optOneOf<const T extends string>(key: string, values: readonly T[]): v.GenericSchema<unknown, T | undefined> {
  return opt(v.picklist(values, (issue) => `'${key}' must be ${values.map((x) => `"${x}"`).join(' or ')}, got ${shown(issue)}`));
}

/** An object argument with these fields (other keys are kept and ignored). */
export function args<E extends v.ObjectEntries>(entries: E): v.LooseObjectSchema<E, undefined> {
  return v.looseObject(entries);
}

/** Any argument object, as it is. */
export const anyArg: ArgSchema<Record<string, unknown>> = v.custom<Record<string, unknown>>(isPlainObject);

/**
 * `msg_id`: the short id of a message; a full id (message URL) is split with RQ's pattern.
 * The key must be there (any value: RQ reads it as text).
 */
export const msgIdArg: ArgSchema<{ msg_id: string } & Record<string, unknown>> = v.pipe(
  anyArg,
  v.check((a) => 'msg_id' in a, "lacking 'msg_id' field"),
  v.transform((a) => ({ ...a, msg_id: parseFullId(String(a['msg_id'])).shortId })),
);
