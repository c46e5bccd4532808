/**
 * `rows` (the queue page's listing; see list-rows.ts): one state's messages, filtered,
 * sorted and paged, with what the page shows of each. Argument: `{"state", "filter"?:
 * {param1..param4?, src?, text?, from?, to?}, "sort"?, "offset"?, "limit"?}` (`from`,
 * `to`: epoch seconds; `sort`: created, finished or duration, descending with a leading
 * `-`; `limit` at most ROWS_MAX, default 50). Precondition: the queue is not DOWN. On
 * disk: nothing (reads). Errors: RQ_BAD_REQUEST naming the field (`'filter.param1' must be
 * a non-empty string, got 3`). Reply: `["ok", {total, matching, rows}]`.
 */
import * as v from 'valibot';
import { isPlainObject } from '../../domain/message.js';
import { STATES, isState, type State } from '../../domain/states.js';
import { ROWS_MAX, ROW_SORTS, type RowFilter, type RowSort, type RowsReply } from '../../rpc/queue-api.js';
import { anyValue, args, optCount, optNumber } from '../args.js';
import { command } from '../command.js';
import { listRows } from '../list-rows.js';

const got = (x: unknown): string => JSON.stringify(x) ?? 'undefined';
const TEXT_KEYS = ['param1', 'param2', 'param3', 'param4', 'src', 'text'] as const;
const TIME_KEYS = ['from', 'to'] as const;

/** The filter, checked field by field; a refusal names the field. */
function checkFilter(x: unknown): RowFilter | string {
  if (x === undefined || x === null) return {};
  if (!isPlainObject(x)) return `'filter' must be an object, got ${got(x)}`;
  const out: RowFilter = {};
  for (const [key, value] of Object.entries(x)) {
    if (value === undefined || value === null) continue;
    if ((TEXT_KEYS as readonly string[]).includes(key)) {
      if (typeof value !== 'string' || value === '') return `'filter.${key}' must be a non-empty string, got ${got(value)}`;
      out[key as (typeof TEXT_KEYS)[number]] = value;
    } else if ((TIME_KEYS as readonly string[]).includes(key)) {
      if (typeof value !== 'number' || !Number.isFinite(value)) return `'filter.${key}' must be a number (epoch seconds), got ${got(value)}`;
      out[key as (typeof TIME_KEYS)[number]] = value;
    } else {
      return `'filter' has no field '${key}' (it has ${[...TEXT_KEYS, ...TIME_KEYS].join(', ')})`;
    }
  }
  return out;
}

export const rows = command({
  arg: args({
    state: v.pipe(
      anyValue,
      v.check(isState, (issue) => `'state' must be one of ${STATES.join(', ')}, got ${got(issue.input)}`),
      v.transform((x) => x as State),
    ),
    filter: v.pipe(
      anyValue,
      v.check((x) => typeof checkFilter(x) !== 'string', (issue) => checkFilter(issue.input) as string),
      v.transform((x) => checkFilter(x) as RowFilter),
    ),
    sort: v.pipe(
      anyValue,
      v.check((x) => x === undefined || x === null || (ROW_SORTS as readonly unknown[]).includes(x), (issue) => `'sort' must be one of ${ROW_SORTS.join(', ')}, got ${got(issue.input)}`),
      v.transform((x) => (x ?? undefined) as RowSort | undefined),
    ),
    offset: optCount('offset'),
    limit: optNumber('limit', { min: 1, max: ROWS_MAX, integer: true }),
  }),
  run: async (s, a): Promise<['ok', RowsReply]> => ['ok', await listRows(s, a.state, a.filter, a.sort, a.offset ?? 0, a.limit ?? 50)],
});
