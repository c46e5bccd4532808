/**
 * The dashboard's bulk actions (docs/dashboard/bulk-actions.md): `POST /q/:name/bulk`
 * and a job's progress page, `GET /q/:name/bulk/:job` and its `.json`.
 *
 * The POST names an operation (`op=retry|clone|delete|move`, domain/bulk-ops.ts), the
 * state the messages were chosen in (`state`), `dest_queue` for a move, and the messages:
 * the checked rows (`ids`, repeated) or `all=1` with the queue page's filter fields
 * (list-filter.ts), which `selectIds` turns into ids. Without `confirm=1` it answers the
 * confirmation page (how many, the first few ids) and changes nothing; its form posts the
 * same fields again with `confirm=1`, which starts the job (bulk-jobs.ts) and lands on its
 * progress page. "All matching" is selected again at the confirmation's POST: the job
 * takes what matches then. Bad input is a 400 naming the field; nothing is done by a GET.
 */
import { Router, type Request, type Response } from 'express';
import { isRefusal } from '../../client/refusal.js';
import { BULK_FROM, BULK_OPS, isBulkOp, type BulkOp } from '../../domain/bulk-ops.js';
import { isSafeId } from '../../domain/ids.js';
import { STATES, isState, type State } from '../../domain/states.js';
import { ROWS_MAX, type RowFilter } from '../../rpc/queue-api.js';
import { BulkJobs, KEEP_MS, MAX_RUNNING, jobView, type BulkJob } from '../bulk-jobs.js';
import type { WebContext } from '../context.js';
import type { Gateway } from '../gateway.js';
import { listView, type FilterFields } from '../list-filter.js';
import { params } from '../params.js';
import { sendPage, urlFor } from '../render.js';
import { dump, webError } from '../web-errors.js';

/** Checked rows in one POST, at most (a page of the queue page is far fewer). */
const MAX_CHECKED = 1_000;
/** Ids shown on the confirmation page. */
const SHOWN_IDS = 10;

const OP_TEXT: Record<BulkOp, string> = { retry: 'Retry', clone: 'Clone', delete: 'Delete', move: 'Move' };

/** A form field as one string: absent is undefined, anything but one string a 400 naming it. */
function field(given: Record<string, unknown>, key: string): string | undefined {
  const x = given[key];
  if (x === undefined) return undefined;
  if (typeof x !== 'string') throw webError('RQ_BAD_REQUEST', `'${key}' must be given once, as text`);
  return x;
}

/**
 * The ids of the messages in `state` of `queue` that `filter` matches, in creation order:
 * the queue's `rows` (the queue page's own listing), ROWS_MAX a call.
 */
export async function selectIds(gw: Gateway, queue: string, state: State, filter: RowFilter): Promise<string[]> {
  const ids: string[] = [];
  for (;;) {
    const reply = await gw.queues.send(queue, 'rows', { state, filter, sort: 'created', offset: ids.length, limit: ROWS_MAX }, { timeoutMs: 60_000 });
    if (isRefusal(reply)) throw webError('RQ_BAD_REQUEST', `The queue did not list the messages: ${dump(reply)}`);
    ids.push(...reply[1].rows.map((row) => row.msg_id));
    if (reply[1].rows.length < ROWS_MAX || ids.length >= reply[1].matching) return ids;
  }
}

/** The checked rows: `ids`, one or repeated, each a message id. */
function checkedIds(given: Record<string, unknown>): string[] {
  const raw = given['ids'];
  const list: unknown[] = raw === undefined ? [] : Array.isArray(raw) ? raw : [raw];
  if (list.length === 0) throw webError('RQ_BAD_REQUEST', "'ids': no messages checked; check some rows, or choose all matching (all=1)");
  if (list.length > MAX_CHECKED) throw webError('RQ_BAD_REQUEST', `'ids': ${list.length} checked, at most ${MAX_CHECKED}; choose all matching (all=1) instead`);
  const bad = list.find((x) => !isSafeId(x));
  if (bad !== undefined) throw webError('RQ_BAD_REQUEST', `'ids' must be message ids, got ${JSON.stringify(bad)}`);
  return [...new Set(list as string[])];
}

/** What a POST asks, checked: a 400 naming the first bad field. */
interface Asked {
  op: BulkOp;
  state: State;
  dest?: string;
  all: boolean;
  /** "All matching": the filter as the form gave it (shown again on the confirmation) and as `rows` takes it. */
  fields: FilterFields;
  filter: RowFilter;
}

function asked(gw: Gateway, queue: string, req: Request, given: Record<string, unknown>): Asked {
  const op = field(given, 'op');
  if (!isBulkOp(op)) throw webError('RQ_BAD_REQUEST', `'op' must be one of ${BULK_OPS.join(', ')}, got ${JSON.stringify(op ?? null)}`);
  const state = field(given, 'state');
  if (!isState(state)) throw webError('RQ_BAD_REQUEST', `'state' must be one of ${STATES.join(', ')}, got ${JSON.stringify(state ?? null)}`);
  if (!BULK_FROM[op].includes(state)) throw webError('RQ_BAD_REQUEST', `'op' ${op} applies to messages in ${BULK_FROM[op].join(', ')}, not in ${state}`);
  let dest: string | undefined;
  if (op === 'move') {
    dest = field(given, 'dest_queue')?.trim() ?? '';
    if (dest === '') throw webError('RQ_BAD_REQUEST', "'dest_queue': name the queue to move the messages to");
    if (dest === queue) throw webError('RQ_BAD_REQUEST', `'dest_queue' must be another queue than ${queue}`);
    if (!gw.queueExists(dest)) throw webError('RQ_BAD_REQUEST', `'dest_queue': no such queue ${JSON.stringify(dest)}`);
  }
  const all = field(given, 'all') === '1';
  const view = all ? listView(req) : undefined;
  return { op, state, ...(dest === undefined ? {} : { dest }), all, fields: view?.fields ?? {}, filter: view?.filter ?? {} };
}

export function bulkRoutes(ctx: WebContext): Router {
  const { gw, respond } = ctx;
  const root = ctx.config.relativeRoot;
  const jobs = new BulkJobs(gw, ctx.log);
  const r = Router();

  r.post('/q/:name/bulk', async (req: Request, res: Response) => {
    const q = gw.existing(String(req.params['name']));
    const given = params(req);
    const a = asked(gw, q.name, req, given);
    const ids = a.all ? await selectIds(gw, q.name, a.state, a.filter) : checkedIds(given);
    if (field(given, 'confirm') !== '1') {
      await sendPage(res, 'bulk_confirm', { name: q.name, ...a, filter: a.fields, dest: a.dest, opText: OP_TEXT[a.op], ids: a.all ? [] : ids, count: ids.length, shown: ids.slice(0, SHOWN_IDS), keepMinutes: KEEP_MS / 60_000 });
      return;
    }
    if (ids.length === 0) {
      respond.redirect(req, res, `${urlFor(root, 'q', q.name)}?state=${a.state}`, { notice: 'No messages matched: nothing was done' });
      return;
    }
    const user = typeof res.locals['user'] === 'string' ? res.locals['user'] : '-';
    const job = jobs.start({ queue: q.name, op: a.op, state: a.state, ids, ...(a.dest === undefined ? {} : { dest: a.dest }), user });
    respond.redirect(req, res, urlFor(root, 'q', q.name, 'bulk', job.id));
  });

  r.get('/q/:name/bulk/:job', async (req: Request, res: Response) => {
    const q = gw.existing(String(req.params['name']));
    const raw = String(req.params['job']);
    const json = raw.endsWith('.json');
    const job: BulkJob | undefined = jobs.get(q.name, json ? raw.slice(0, -'.json'.length) : raw);
    if (job === undefined) throw webError('RQ_NOT_FOUND', `No bulk action ${raw} of queue ${q.name} (they are kept ${KEEP_MS / 60_000} minutes after they end)`);
    if (json) {
      res.json(jobView(job));
      return;
    }
    await sendPage(res, 'bulk_progress', { name: q.name, job: jobView(job), opText: OP_TEXT[job.spec.op], maxRunning: MAX_RUNNING });
  });

  return r;
}
