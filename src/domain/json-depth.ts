/**
 * How deep JSON input may nest. Node parses JSON of any depth, but JSON.stringify and
 * every other recursive walk of a value run out of stack a few thousand levels down, so
 * each front door refuses input nested deeper than MAX_JSON_DEPTH before it uses it: the
 * web's message input, a Cloudq job, and the argument of a queue socket command.
 * The limit is the default of Ruby's JSON parser, which RQ used.
 */

/** At most this many arrays and objects, one inside the other (a flat object is 1). */
export const MAX_JSON_DEPTH = 100;

/** Whether `value` nests arrays and objects more than `max` deep (the walk stops at `max`). */
export function isTooDeep(value: unknown, max = MAX_JSON_DEPTH): boolean {
  if (value === null || typeof value !== 'object') return false;
  if (max === 0) return true;
  return (Array.isArray(value) ? value : Object.values(value)).some((child) => isTooDeep(child, max - 1));
}
