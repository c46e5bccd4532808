/**
 * Checking a request's fields at a front door, one way for every door: a valibot schema
 * decides, and `checkInput` hands back either the value it shapes or the first problem
 * (the field, by its dotted path, and the schema's message for it); `inputProblem` only
 * the problem, for a door that keeps the value as it came. The door words the
 * refusal as its protocol fixes it. config-check.ts does the same for config files.
 */
import * as v from 'valibot';

/** The first problem of a request's input. */
export interface InputProblem {
  /** The field's dotted path (`ttl`, `job.args`), '' for the input as a whole. */
  field: string;
  /** The schema's message for it. */
  message: string;
  /** The value found at `field`. */
  got: unknown;
}

export type Checked<T> = { ok: true; value: T } | { ok: false; problem: InputProblem };

/** The keys of an issue's path, as text (`?` for a key that is not a string or number). */
export function issueKeys(issue: v.BaseIssue<unknown>): string[] {
  return (issue.path ?? []).map((item) => (typeof item.key === 'string' || typeof item.key === 'number' ? String(item.key) : '?'));
}

/** `value` checked and shaped by `schema`, or the first field that does not fit. */
export function checkInput<S extends v.GenericSchema>(schema: S, value: unknown): Checked<v.InferOutput<S>> {
  const result = v.safeParse(schema, value, { abortEarly: true });
  if (result.success) return { ok: true, value: result.output };
  const issue = result.issues[0];
  return { ok: false, problem: { field: issueKeys(issue).join('.'), message: issue.message, got: issue.input } };
}

/** The first field of `value` that does not fit `schema`, or undefined when all of it fits (the value itself is kept as it is). */
export function inputProblem(schema: v.GenericSchema, value: unknown): InputProblem | undefined {
  const checked = checkInput(schema, value);
  return checked.ok ? undefined : checked.problem;
}
