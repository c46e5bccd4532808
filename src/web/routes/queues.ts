/**
 * Queue-level routes of RQ's HTTP API (docs/http-api.md; the list of queues is
 * overview.ts's): queue creation (form and link) and deletion, the queue page and
 * its `.json` / `.txt` variants, `done.json`, admin operations, restart, the config, and
 * search (RQ's JSON route and the dashboard's free-text form).
 *
 * Every change is an rq-mgr RPC; the web reads only `config.json` (to show it) and, for
 * `new_queue_link`, the config file named (to know where to land). Before it asks rq-mgr
 * for a queue, it checks what the queue would run (create-policy.ts) and answers a
 * refusal with `403` and the reason; rq-mgr then links the very file the web checked
 * (its real path). What a queue runs and its state come from its one `stats` reply
 * (queue-info.ts). The queue page lists one page of one state with the `rows` command
 * (filtered, sorted, paged in the queue process, from memory), so it costs the same on
 * page 1 and page 2,000 of a 100,000-message `que`.
 * Literal `/q/:name/...` routes are declared before `/q/:name`, and the message routes
 * (`/q/:name/:msg_id`, mounted after this router) are never shadowed.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Router, type Request, type Response } from 'express';
import * as v from 'valibot';
import { isOk } from '../../client/rpc.js';
import { asRq, isRefusal } from '../../client/refusal.js';
import { RQ_DIRS, createRefusal, linkRefusal, type CreatePolicy, type Resolved } from '../../domain/create-policy.js';
import { RqError } from '../../domain/errors.js';
import { isPlainObject } from '../../domain/message.js';
import { normaliseQueueConfig } from '../../domain/queue-config.js';
import { bulkOpsFor } from '../../domain/bulk-ops.js';
import { SEARCH_ORDER, STATES, type State } from '../../domain/states.js';
import type { ListRow, MessageView } from '../../rpc/queue-api.js';
import type { QueueLayout } from '../../store/layout.js';
import { readLinkedConfig } from '../../store/config-files.js';
import type { WebContext } from '../context.js';
import type { Flash } from '../flash.js';
import { VIEW_HELPERS } from '../format.js';
import { PAGE_SIZES, listView, timeInput, viewQuery } from '../list-filter.js';
import { PROBE_TIMEOUT_MS } from '../gateway.js';
import { checkedParam, param, params, wantsJson, wholeNumber } from '../params.js';
import { probeQueue } from '../../client/queue-probe.js';
import { sendPage } from '../render.js';
import { sendPullQueuePage } from './pull-queue.js';
import { dump, refused, webError } from '../web-errors.js';

/** How long the queue page waits for its listing: a filter over 100,000 messages reads memory, but may read files. */
const LIST_TIMEOUT_MS = PROBE_TIMEOUT_MS * 10;
/** Matches per queue of the dashboard's search form, and shown in all. */
const SEARCH_LIMIT = 100;
/** Queue-page tabs (RQ's table rows): relay lists RELAYED instead of DONE. */
const TABS: readonly State[] = ['prep', 'que', 'run', 'done', 'err'];
const RELAY_TABS: readonly State[] = ['prep', 'que', 'run', 'err', 'relayed'];

const ADMIN_ACTIONS = ['pause', 'resume', 'down', 'up'] as const;
type AdminAction = (typeof ADMIN_ACTIONS)[number];
/** RQ's past tenses, sic (`downd`, `upd`). */
const PAST: Record<AdminAction, string> = { pause: 'paused', resume: 'resumed', down: 'downd', up: 'upd' };

/**
 * The action of `POST /q/:name/adminoper`: RQ's field (`pause=1`: its presence, exactly
 * one of the four) or, beyond RQ, `oper=<action>`; anything else is a 400 that names the
 * fields. (RQ took the first present in its order, all four meaning none, and answered
 * none with a 500.)
 */
function adminAction(given: Record<string, unknown>): AdminAction {
  const present: string[] = ADMIN_ACTIONS.filter((a) => given[a] !== undefined);
  const oper = given['oper'];
  if (oper !== undefined) present.push(`oper=${typeof oper === 'string' ? oper : JSON.stringify(oper)}`);
  const one = present.length === 1 ? present[0]!.replace(/^oper=/, '') : undefined;
  const action = ADMIN_ACTIONS.find((a) => a === one);
  if (action !== undefined) return action;
  const fields = `oper=${ADMIN_ACTIONS.join('|')}, or one of ${ADMIN_ACTIONS.map((a) => `${a}=1`).join(', ')}`;
  throw webError('RQ_BAD_REQUEST', `Couldn't  queue. Send ${fields}; got ${present.length === 0 ? 'none' : present.join(', ')}.`);
}

/**
 * `<root>q/<name>` with the name inserted raw as RQ does, except what cannot stand
 * in a URL path: bytes outside RFC 3986's path characters (space, `%`, `"`, `<`, `?`,
 * `#`, non-ASCII, control characters) are percent-encoded so the Location header stays
 * valid. `/` and `.` stay raw, so `bad/que/test` and `bad.que.test` land where RQ's did.
 */
function rawQueuePath(root: string, name: string): string {
  const encoded = name.replace(/[^A-Za-z0-9\-._~!$&'()*+,;=:@/]/gu, (c) =>
    [...Buffer.from(c, 'utf8')].map((b) => `%${b.toString(16).toUpperCase().padStart(2, '0')}`).join(''),
  );
  return `${root}q/${encoded}`;
}

/**
 * `:name` of `/q/:name` as a queue and a type. A name may have dots (lmstfy's
 * `test/q` is the queue `test.q`), so `<queue>.json` and `<queue>.txt` of an existing
 * queue come first, then an existing queue's whole name (its page); anything else is
 * split at its first `.` as RQ did (`test.json` → test, json).
 */
function splitName(raw: string, exists: (name: string) => boolean): { name: string; type: string } {
  const typed = /^(.+)\.(json|txt)$/.exec(raw);
  if (typed && exists(typed[1]!)) return { name: typed[1]!, type: typed[2]! };
  const dot = raw.indexOf('.');
  return dot < 0 || exists(raw) ? { name: raw, type: '' } : { name: raw.slice(0, dot), type: raw.slice(dot + 1) };
}

/**
 * The real path of an absolute path, symlinks followed; for a path that does not exist
 * (yet), the real path of its nearest existing parent with the rest of the path.
 */
function realPath(file: string): string {
  const rest: string[] = [];
  for (let at = file; ; at = path.dirname(at)) {
    try {
      return path.join(fs.realpathSync(at), ...rest);
    } catch {
      if (path.dirname(at) === at) return file;
      rest.unshift(path.basename(at));
    }
  }
}

const LIMIT_PARAM = wholeNumber(0, 10);
/** The `state` parameter: a state, or undefined when absent or empty. */
const STATE_PARAM = v.optional(v.pipe(v.picklist(['', ...STATES], `one of ${STATES.join(', ')}`), v.transform((s) => (s === '' ? undefined : s))), '');

async function readText(file: string): Promise<string | undefined> {
  try {
    return await fs.promises.readFile(file, 'utf8');
  } catch {
    return undefined;
  }
}

/** A config file pretty-printed, or as it is when it is not JSON. */
function prettyConfig(text: string): string {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

/** rq-mgr's reply to `create_queue` and `create_queue_link` when the queue was made. */
function isSuccess(reply: unknown): boolean {
  return Array.isArray(reply) && reply[0] === 'success';
}

export function queueRoutes(ctx: WebContext): Router {
  const { gw, config, respond } = ctx;
  const root = config.relativeRoot;
  const r = Router();

  const requireNewQueue = (): void => {
    if (!config.allowNewQueue) throw webError('RQ_FORBIDDEN', 'Queue creation not allowed at this time.', { bare: true });
  };
  /** A path from the install root, as given (made absolute) and with symlinks followed. */
  const resolved = (file: string): Resolved => {
    const given = path.resolve(gw.root.root, file);
    return { given, real: realPath(given) };
  };
  /** create-policy.ts's limits as they are now: config.json's lists, with every directory as given and real. */
  const createPolicy = (): CreatePolicy => ({
    root: resolved('.'),
    scriptDirs: config.scriptDirs.map(resolved),
    queuesDir: resolved(gw.root.queuesDir),
    rqDirs: RQ_DIRS.map((name) => [name, resolved(name)] as const),
    execPrefixes: config.execPrefixes,
    envVars: config.webEnvVars,
  });
  /**
   * Why the web may not create a queue from this config object, with its script resolved
   * as the queue process resolves it (whether it can run now or not).
   */
  const createRefusalOf = (raw: Record<string, unknown>): string | undefined => {
    const queueConfig = normaliseQueueConfig(raw);
    return createRefusal(queueConfig, resolved(queueConfig.script), createPolicy());
  };
  /**
   * The flash after creating or deleting queue `name`: what happened, and rq-mgr's reason
   * when it refused (RQ showed the form and the reply dumped: `We got {…} from form, and
   * ["success", "queue created - awesome"] from QueueMgr`). A success keeps the words
   * `queue created` that RQ's own tests look for on the page.
   */
  const formFlash = (name: string, reply: unknown, ok: string, not: string): Flash => {
    if (isSuccess(reply) || isOk(reply)) return { notice: ok };
    const reason = Array.isArray(reply) && typeof reply[1] === 'string' ? reply[1] : dump(reply);
    return { error: `Queue ${name} ${not}: ${reason}` };
  };

  // ─────────────────────────── creating and deleting queues ───────────────────────────

  r.get('/new_queue', async (_req: Request, res: Response) => {
    requireNewQueue();
    await sendPage(res, 'new_queue');
  });

  r.post('/new_queue', async (req: Request, res: Response) => {
    requireNewQueue();
    const queue = params(req)['queue'];
    if (!isPlainObject(queue)) throw webError('RQ_BAD_REQUEST', 'The form must send queue[name], queue[script] and queue[num_workers]');
    const refusal = createRefusalOf(queue);
    if (refusal !== undefined) throw webError('RQ_FORBIDDEN', refusal);
    const reply = await gw.mgr.send('create_queue', JSON.stringify(queue));
    const name = typeof queue['name'] === 'string' ? queue['name'] : '';
    respond.redirect(req, res, rawQueuePath(root, name), formFlash(name, reply, `New queue created: ${name}`, 'not created'));
  });

  r.post('/new_queue_link', async (req: Request, res: Response) => {
    requireNewQueue();
    const queue = params(req)['queue'];
    const jsonPath = isPlainObject(queue) ? queue['json_path'] : undefined;
    if (typeof jsonPath !== 'string' || jsonPath === '') throw webError('RQ_BAD_REQUEST', 'The form must send queue[json_path], a path relative to the install root');
    let linked: { file: string; raw: unknown };
    try {
      // Beyond RQ: only a regular file inside the install root, of at most 1 MiB, is read.
      const { file, text } = await readLinkedConfig(gw.root.root, jsonPath);
      linked = { file, raw: JSON.parse(text) };
    } catch (e) {
      if (e instanceof RqError || e instanceof SyntaxError) throw webError('RQ_NOT_FOUND', `Couldn't parse json file (${jsonPath}).`);
      throw e;
    }
    const refusal = linkRefusal(jsonPath, linked.file, createPolicy()) ?? (isPlainObject(linked.raw) ? createRefusalOf(linked.raw) : undefined);
    if (refusal !== undefined) throw webError('RQ_FORBIDDEN', refusal);
    // rq-mgr links the file read here (its real path), not what the path names by then.
    const reply = await gw.mgr.send('create_queue_link', linked.file);
    const given = isPlainObject(linked.raw) ? linked.raw['name'] : undefined;
    // A name that is not a string (a bad config) is shown as JavaScript writes it.
    // eslint-disable-next-line @typescript-eslint/no-base-to-string
    const name = typeof given === 'string' ? given : String(given ?? '');
    respond.redirect(req, res, rawQueuePath(root, name), formFlash(name, reply, `New queue created: ${name} (from ${jsonPath})`, 'not created'));
  });

  r.post('/delete_queue', async (req: Request, res: Response) => {
    const name = param(req, 'queue_name');
    if (name === undefined || name === '') throw webError('RQ_BAD_REQUEST', 'The form must send queue_name');
    const reply = await gw.mgr.send('delete_queue', name);
    respond.redirect(req, res, root, formFlash(name, reply, `Queue ${name} is being deleted`, 'not deleted'));
  });

  // ─────────────────────────── search ───────────────────────────

  r.get('/search', async (req: Request, res: Response) => {
    if (param(req, 'x_format') === 'html') {
      await searchPage(req, res);
      return;
    }
    // RQ's JSON route: one queue, every match, no limit.
    const name = param(req, 'name') ?? '';
    gw.existing(name);
    const reply = await gw.queues.send(name, 'search', { query: queryParam(req), exact: params(req)['exact'] !== undefined }, { timeoutMs: 60_000 });
    if (isRefusal(reply)) throw webError('RQ_BAD_REQUEST', `Search failed: ${dump(asRq(reply))}`);
    res.json(reply[1].messages);
  });

  /** `query[<field>]=<text>` pairs; each value must be one string. */
  function queryParam(req: Request): Record<string, string> {
    const query = params(req)['query'] ?? {};
    if (!isPlainObject(query) || !Object.values(query).every((v) => typeof v === 'string')) {
      throw webError('RQ_BAD_REQUEST', 'query[<field>] must each be given once, as text');
    }
    return query as Record<string, string>;
  }

  /**
   * The dashboard's search: free text `q` (in the id, a param or the status text), RQ's
   * `query[...]` pairs, or both; in one queue (`name`) or all, one engine search each;
   * optionally in one `state`. Results by state in RQ's order, newest first within a state.
   */
  async function searchPage(req: Request, res: Response): Promise<void> {
    const text = (param(req, 'q') ?? '').trim();
    const name = param(req, 'name') ?? '';
    const state = checkedParam(req, 'state', STATE_PARAM);
    const query = queryParam(req);
    const all = (await gw.queueNames()) ?? [];
    const names = name === '' ? all : [gw.existing(name).name];
    const searched = text !== '' || Object.keys(query).length > 0;
    const arg = {
      query,
      ...(text !== '' ? { text } : {}),
      exact: params(req)['exact'] !== undefined,
      states: state ? [state] : STATES,
      limit: SEARCH_LIMIT,
    };
    const results: Array<{ queue: string; view: MessageView }> = [];
    let truncated = false;
    const failed: string[] = [];
    await Promise.all(
      (searched ? names : []).map(async (queue) => {
        const reply = await gw.queues.probe(queue, 'search', arg, 30_000);
        if (reply === undefined || isRefusal(reply)) {
          failed.push(queue);
          return;
        }
        if (reply[1].truncated) truncated = true;
        for (const view of reply[1].messages) results.push({ queue, view });
      }),
    );
    // By state in RQ's order, then newest first (as the queue lists err and done).
    const rank = (view: MessageView): number => SEARCH_ORDER.indexOf(view.state);
    results.sort((a, b) => rank(a.view) - rank(b.view) || b.view.msg_id.localeCompare(a.view.msg_id));
    if (results.length > SEARCH_LIMIT) truncated = true;
    await sendPage(res, 'search', {
      ...VIEW_HELPERS,
      searchText: text,
      searchName: name,
      searchState: state ?? '',
      queues: all,
      searched,
      results: results.slice(0, SEARCH_LIMIT),
      truncated,
      failed,
      limit: SEARCH_LIMIT,
      states: STATES,
    });
  }

  // ─────────────────────────── /q/:name/... (literal routes first) ───────────────────────────

  r.get('/q/:name/done.json', async (req: Request, res: Response) => {
    const q = gw.existing(String(req.params['name']));
    const limit = checkedParam(req, 'limit', LIMIT_PARAM);
    const reply = await gw.queues.send(q.name, 'messages', { state: 'done', limit });
    if (isRefusal(reply)) throw webError('RQ_PROTOCOL', `Queue ${q.name} answered ${dump(asRq(reply))}`);
    res.json(reply.map((m) => m.msg_id));
  });

  r.get('/q/:name/config.json', async (req: Request, res: Response) => {
    const q = gw.existing(String(req.params['name']));
    let body: Buffer;
    let mtime: Date;
    try {
      [body, mtime] = await Promise.all([fs.promises.readFile(q.configFile), fs.promises.stat(q.configFile).then((s) => s.mtime)]);
    } catch {
      throw webError('RQ_NOT_FOUND', 'Queue config not found');
    }
    res.setHeader('Last-Modified', mtime.toUTCString());
    res.type('application/json').send(body);
  });

  r.get('/q/:name/config', async (req: Request, res: Response) => {
    const q = gw.existing(String(req.params['name']));
    const queue = gw.routed(q.name);
    const reply = await gw.queues.send(queue, 'config', {});
    if (isRefusal(reply)) throw webError('RQ_PROTOCOL', `Queue ${queue} answered ${dump(asRq(reply))}`);
    res.json(reply[1]);
  });

  // adminoper and restart answer a form with a redirect and its flash, and `x_format=json` with rq-mgr's reply (`["ok", "<q>"]`).
  r.post('/q/:name/adminoper', async (req: Request, res: Response) => {
    const q = gw.existing(String(req.params['name']));
    const action = adminAction(params(req));
    const reply = await gw.mgr.send(`${action}_queue`, q.name);
    if (isRefusal(reply)) throw refused(`Couldn't ${action} queue.`, reply);
    if (wantsJson(req)) res.json(reply);
    else respond.redirect(req, res, respond.back(req), { notice: `Successfully ${PAST[action]} queue ${q.name}` });
  });

  r.post('/q/:name/restart', async (req: Request, res: Response) => {
    const q = gw.existing(String(req.params['name']));
    const reply = await gw.mgr.send('restart_queue', q.name);
    if (isRefusal(reply)) throw refused("Couldn't restart queue.", reply);
    if (wantsJson(req)) res.json(reply);
    else respond.redirect(req, res, respond.back(req), { notice: `Successfully restarted queue ${q.name}` });
  });

  r.get('/q/:name', async (req: Request, res: Response) => {
    const { name, type } = splitName(String(req.params['name']), (n) => gw.queueExists(n));
    const q = gw.existing(name);
    if (type === 'txt') await queueText(res, q.name);
    else if (type === 'json') await queueJson(res, q.name);
    else await queueOrPullPage(req, res, q);
  });

  /** RQ's queue text, exactly; `status: DOWN` also when the process does not answer. */
  async function queueText(res: Response, name: string): Promise<void> {
    const p = await probeQueue(gw, name);
    res.type('text/plain; charset=utf-8');
    if (!p.up || p.status === 'DOWN') {
      res.send('status: DOWN\n');
      return;
    }
    const c = p.counts;
    res.send(
      `status: ${p.status}\nuptime: ${p.uptime}\n\n` +
        `prep: ${c.prep}\nque: ${c.que}\nrun: ${c.run}\n\n` +
        `done: ${c.done}\nerr: ${c.err}\nrelayed: ${c.relayed}\n`,
    );
  }

  /** RQ's queue JSON: every state's whole list (RQ's API has no paging). */
  async function queueJson(res: Response, name: string): Promise<void> {
    const p = await probeQueue(gw, name);
    if (!p.up) throw webError('RQ_UNAVAILABLE', `Queue ${name} is not answering`);
    if (p.status === 'DOWN') {
      res.json({ status: 'DOWN' });
      return;
    }
    const lists = await Promise.all(
      STATES.map(async (state) => {
        const reply = await gw.queues.send(name, 'messages', { state }, { timeoutMs: 60_000 });
        if (isRefusal(reply)) throw webError('RQ_PROTOCOL', `Queue ${name} answered ${dump(asRq(reply))}`);
        return reply;
      }),
    );
    const c = p.counts;
    res.json({
      status: p.status,
      ping: 'pong',
      pid: p.pid,
      uptime: p.uptime,
      time: Math.floor(Date.now() / 1000),
      prep_size: c.prep,
      que_size: c.que,
      run_size: c.run,
      done_size: c.done,
      err_size: c.err,
      relayed_size: c.relayed,
      messages: Object.fromEntries(STATES.map((s, i) => [s, lists[i]])),
    });
  }

  /** A pull queue's page is pull-queue.ts's; any other queue's is queuePage. */
  async function queueOrPullPage(req: Request, res: Response, q: QueueLayout): Promise<void> {
    const kind = ctx.kinds.one(q.name);
    if (kind.kind === 'pull') await sendPullQueuePage(ctx, req, res, q, kind);
    else await queuePage(req, res, q);
  }

  /**
   * The dashboard's queue page: status, admin, config, schedule, and one page of one
   * state, filtered and sorted as its URL says (list-filter.ts), listed by the `rows`
   * command, with the bulk actions that apply to the state. A page past the last shows
   * the last.
   */
  async function queuePage(req: Request, res: Response, q: QueueLayout): Promise<void> {
    const view = listView(req);
    const [probe, configText] = await Promise.all([probeQueue(gw, q.name), readText(q.configFile)]);
    const base = q.name === 'relay' ? RELAY_TABS : TABS;
    const state = view.state ?? 'que';
    const tabs = STATES.filter((s) => base.includes(s) || s === state || (probe.up && probe.counts[s] > 0));
    let listing: { state: State; page: number; pages: number; total: number; matching: number; rows: ListRow[]; error?: string } | undefined;
    if (probe.up && probe.status !== 'DOWN') {
      const ask = (page: number) => gw.queues.probe(q.name, 'rows', { state, filter: view.filter, ...(view.sort ? { sort: view.sort } : {}), offset: (page - 1) * view.size, limit: view.size }, LIST_TIMEOUT_MS);
      let page = view.page;
      let reply = await ask(page);
      const pagesOf = (matching: number): number => Math.max(1, Math.ceil(matching / view.size));
      if (reply !== undefined && !isRefusal(reply) && page > pagesOf(reply[1].matching)) {
        page = pagesOf(reply[1].matching);
        reply = await ask(page);
      }
      const total = probe.counts[state];
      listing = reply !== undefined && !isRefusal(reply)
        ? { state, page, pages: pagesOf(reply[1].matching), total: reply[1].total, matching: reply[1].matching, rows: reply[1].rows }
        : { state, page, pages: 1, total, matching: 0, rows: [], error: 'The queue did not list its messages; try again.' };
    }
    const shown = { ...view, state };
    await sendPage(res, 'queue', {
      ...VIEW_HELPERS,
      name: q.name,
      probe,
      admin: probe.up ? probe.admin : null,
      configText: configText === undefined ? undefined : prettyConfig(configText),
      schedule: probe.up ? probe.schedule : [],
      tabs,
      listing,
      view: shown,
      filter: view.fields,
      pageSizes: PAGE_SIZES,
      timeInput,
      query: (change?: Parameters<typeof viewQuery>[1]) => viewQuery(listing ? { ...shown, page: listing.page } : shown, change),
      pageSize: view.size,
      bulkOps: bulkOpsFor(state),
    });
  }

  return r;
}
