/**
 * The queue page's view of a state, as its URL says it (`GET /q/:name?state=err&param1=
 * acme&sort=-duration&size=100&page=3`): the state, the filter (`param1`..`param4`, `src`,
 * `text`, `from`, `to`), the sort, the page size and the page. Every field is checked
 * here: a bad one is a 400 that names it. The same fields, posted, name a filtered set
 * for the bulk actions, so this parser is theirs too. Also the query string of a view,
 * for the page's links (pager, tabs, sort).
 */
import type { Request } from 'express';
import { STATES, type State } from '../domain/states.js';
import { ROW_SORTS, type RowFilter, type RowSort } from '../rpc/queue-api.js';
import { params } from './params.js';
import { webError } from './web-errors.js';

/** The page sizes offered; the first is the default. */
export const PAGE_SIZES = [50, 100, 200, 500] as const;
const TEXT_FIELDS = ['param1', 'param2', 'param3', 'param4', 'src', 'text'] as const;
const TIME_FIELDS = ['from', 'to'] as const;

/** The filter fields as the URL gave them (empty ones left out): what the form shows again. */
export type FilterFields = Partial<Record<(typeof TEXT_FIELDS)[number] | (typeof TIME_FIELDS)[number], string>>;

export interface ListView {
  state: State | undefined;
  /** As given, for the form and the links. */
  fields: FilterFields;
  /** As the `rows` command takes it (`from`, `to` in epoch seconds). */
  filter: RowFilter;
  sort: RowSort | undefined;
  size: number;
  page: number;
}

const bad = (field: string, want: string, value: unknown): Error => webError('RQ_BAD_REQUEST', `'${field}' must be ${want}, got ${JSON.stringify(value)}`);

/** One parameter as a string; absent is undefined, an empty string too; a repeated or nested one is a 400. */
function text(given: Record<string, unknown>, field: string): string | undefined {
  const value = given[field];
  if (value === undefined || value === '') return undefined;
  if (typeof value !== 'string') throw bad(field, 'given once, as text', value);
  return value;
}

/** `YYYY-MM-DDTHH:MM` (the server's local time, as a datetime-local input sends it) or epoch seconds, as epoch seconds. */
export function timeParam(field: string, value: string): number {
  if (/^\d{1,12}$/.test(value)) return Number(value);
  const m = /^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d)(?::(\d\d))?$/.exec(value);
  const at = m ? new Date(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6] ?? 0)) : undefined;
  if (at === undefined || Number.isNaN(at.getTime()) || at.getMonth() !== Number(m![2]) - 1 || at.getDate() !== Number(m![3])) {
    throw bad(field, 'a date-time YYYY-MM-DDTHH:MM (local time) or epoch seconds', value);
  }
  return Math.floor(at.getTime() / 1000);
}

/** A `from`/`to` as the form's date-time field shows it: epoch seconds as `YYYY-MM-DDTHH:MM` local time, a date-time as given. */
export function timeInput(value: string): string {
  if (!/^\d+$/.test(value)) return value;
  const at = new Date(Number(value) * 1000);
  const p = (n: number): string => String(n).padStart(2, '0');
  return `${at.getFullYear()}-${p(at.getMonth() + 1)}-${p(at.getDate())}T${p(at.getHours())}:${p(at.getMinutes())}`;
}

/** The view of a request's parameters (query, or a posted form); a bad field is a 400 naming it. */
export function listView(req: Request): ListView {
  const given = params(req);
  const stateText = text(given, 'state');
  if (stateText !== undefined && !(STATES as readonly string[]).includes(stateText)) throw bad('state', `one of ${STATES.join(', ')}`, stateText);
  const fields: FilterFields = {};
  const filter: RowFilter = {};
  for (const f of TEXT_FIELDS) {
    const value = text(given, f);
    if (value !== undefined) fields[f] = filter[f] = value;
  }
  for (const f of TIME_FIELDS) {
    const value = text(given, f);
    if (value !== undefined) {
      filter[f] = timeParam(f, value);
      fields[f] = value;
    }
  }
  const sortText = text(given, 'sort');
  if (sortText !== undefined && !(ROW_SORTS as readonly string[]).includes(sortText)) throw bad('sort', `one of ${ROW_SORTS.join(', ')}`, sortText);
  const sizeText = text(given, 'size');
  const size = sizeText === undefined ? PAGE_SIZES[0] : Number(sizeText);
  if (!(PAGE_SIZES as readonly number[]).includes(size)) throw bad('size', `one of ${PAGE_SIZES.join(', ')}`, sizeText);
  const pageText = text(given, 'page');
  if (pageText !== undefined && !/^[1-9]\d{0,8}$/.test(pageText)) throw bad('page', 'a whole number, at least 1', pageText);
  return { state: stateText as State | undefined, fields, filter, sort: sortText as RowSort | undefined, size, page: Number(pageText ?? 1) };
}

/** The query string of a view (without `?`), with `change` applied; defaults left out, but a page asked for. */
export function viewQuery(view: { state: State; fields: FilterFields; sort: RowSort | undefined; size: number; page: number }, change: { state?: State; sort?: RowSort | undefined; page?: number } = {}): string {
  const q = new URLSearchParams({ state: change.state ?? view.state });
  for (const [k, value] of Object.entries(view.fields)) q.set(k, value);
  const sort = 'sort' in change ? change.sort : view.sort;
  if (sort !== undefined) q.set('sort', sort);
  if (view.size !== PAGE_SIZES[0]) q.set('size', String(view.size));
  const page = change.page ?? (change.state !== undefined || 'sort' in change ? 1 : view.page);
  if (page !== 1 || change.page !== undefined) q.set('page', String(page));
  return q.toString();
}
