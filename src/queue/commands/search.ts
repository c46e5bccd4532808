/**
 * `search` (RQ's `GET /search` as a command, paged, with an optional free text; see
 * listings.ts). Argument: `{"query": {field: text}?, "text"?, "exact"?, "states"?,
 * "offset"?, "limit"?}`. Precondition: the queue is not DOWN. On disk: nothing (reads).
 * Errors: RQ_BAD_REQUEST naming the field (`'query' must be an object of strings, got
 * <value>`...). Reply: `["ok", {messages, scanned, truncated}]`.
 */
import * as v from 'valibot';
import { isPlainObject } from '../../domain/message.js';
import { STATES, isState, type State } from '../../domain/states.js';
import { anyValue, args, optCount } from '../args.js';
import { command } from '../command.js';
import { search as find, type SearchResult } from '../listings.js';

const got = (issue: { input: unknown }): string => JSON.stringify(issue.input);

export const search = command({
  arg: args({
    query: v.pipe(
      anyValue,
      v.transform((x) => x ?? {}),
      v.check((q) => isPlainObject(q) && Object.values(q).every((x) => typeof x === 'string'), (issue) => `'query' must be an object of strings, got ${got(issue)}`),
      v.transform((q) => q as Record<string, string>),
    ),
    exact: v.pipe(
      anyValue,
      v.transform((x) => x ?? false),
      v.check((x) => typeof x === 'boolean', (issue) => `'exact' must be true or false, got ${got(issue)}`),
      v.transform((x) => x === true),
    ),
    text: v.pipe(
      anyValue,
      v.transform((x) => x ?? undefined),
      v.check((x) => x === undefined || (typeof x === 'string' && x !== ''), (issue) => `'text' must be a non-empty string, got ${got(issue)}`),
      v.transform((x) => x as string | undefined),
    ),
    states: v.pipe(
      anyValue,
      v.transform((x) => x ?? STATES),
      v.check((x) => Array.isArray(x) && x.every(isState), (issue) => `'states' must be an array of states (${STATES.join(', ')}), got ${got(issue)}`),
      v.transform((x) => x as State[]),
    ),
    offset: optCount('offset'),
    limit: optCount('limit'),
  }),
  run: async (s, a): Promise<['ok', SearchResult]> => [
    'ok',
    await find(s, { query: a.query, exact: a.exact, text: a.text, states: a.states, offset: a.offset ?? 0, limit: a.limit ?? Infinity }),
  ],
});
