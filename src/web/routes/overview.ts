/**
 * The dashboard's queue list and RQ's lists of queues: the main page (`/`, a page of 100
 * queues with a filter), `/q.json` (RQ's reply, every queue; beyond RQ, `page` or
 * `filter` asks for one page) and `/q.txt`. The queues are probed as queue-info.ts says:
 * one `host_stats` per host process, one `stats` per queue process of its own.
 * The main page marks each queue's kind and door and groups its rows (queue-kinds.ts):
 * script queues, pull queues by door (lmstfy's by namespace), then the built-in ones;
 * `kind` (script, pull, builtin) shows one kind only. Filter, kind and page are in the URL.
 */
import { Router, type Request, type Response } from 'express';
import * as v from 'valibot';
import { packageVersion } from '../../lib/install-root.js';
import type { WebContext } from '../context.js';
import { VIEW_HELPERS, formatEpoch } from '../format.js';
import { PAGE_PARAM, checkedParam, params } from '../params.js';
import { mgrPidOf } from '../pipeline.js';
import { probeNamed, type QueueProbe } from '../../client/queue-probe.js';
import { probeMgr, probeQueues } from '../queue-info.js';
import { KINDS, kindOf, type Kind, type QueueKind, type QueueKinds } from '../queue-kinds.js';
import { sendPage } from '../render.js';

/** rq's own version, shown on the dashboard apart from the RQ version rq-mgr answers (`/q.json`'s `version`). */
const RQ_PACKAGE_VERSION = packageVersion();

/** Queues per page of the dashboard, and of `/q.json` when asked for a page or a filter. */
const QUEUES_PER_PAGE = 100;
/** The `filter` parameter: text a queue's name contains (case ignored); '' for none. */
const FILTER_PARAM = v.optional(v.pipe(v.string('text'), v.maxLength(255, 'at most 255 characters')), '');
/** The main page's `kind` parameter: one kind of queue, or '' for all. */
const KIND_PARAM = v.optional(v.picklist(['', ...KINDS], `one of ${KINDS.join(', ')}`), '');

/** One page of the queues whose names contain `filter`, and where it is among them. */
interface QueuePage {
  names: string[];
  filter: string;
  page: number;
  pages: number;
  /** Queues that match the filter. */
  total: number;
  /** The kind shown ('' for all: the main page's `kind`). */
  kind: Kind | '';
}

function pageOfQueues(all: readonly string[], filter: string, requested: number, kind: Kind | '' = ''): QueuePage {
  const needle = filter.toLowerCase();
  const matching = needle === '' ? all : all.filter((n) => n.toLowerCase().includes(needle));
  const pages = Math.max(1, Math.ceil(matching.length / QUEUES_PER_PAGE));
  const page = Math.min(requested, pages);
  return { names: matching.slice((page - 1) * QUEUES_PER_PAGE, page * QUEUES_PER_PAGE), filter, page, pages, total: matching.length, kind };
}

/** The main page's order: by group (QueueKind's `order`), by name within one (the names come sorted); of kind `kind` only, unless ''. */
function grouped(names: readonly string[], kinds: ReadonlyMap<string, QueueKind>, kind: Kind | ''): string[] {
  const groups = new Map<string, string[]>();
  for (const name of names) {
    const k = kinds.get(name);
    if (k === undefined || (kind !== '' && k.kind !== kind)) continue;
    const group = groups.get(k.order);
    if (group === undefined) groups.set(k.order, [name]);
    else group.push(name);
  }
  return [...groups.keys()].sort().flatMap((order) => groups.get(order) ?? []);
}

export function overviewRoutes(ctx: WebContext): Router {
  const { gw, config } = ctx;
  const root = config.relativeRoot;
  const r = Router();

  /**
   * The page of queues a request asks for (`filter`, `page`; with `kinds`, the main
   * page's groups and `kind`), probed; null when rq-mgr does not list its queues.
   */
  const probePage = async (req: Request, kinds?: QueueKinds): Promise<{ list: QueuePage; probes: QueueProbe[]; kinds?: Map<string, QueueKind> } | null> => {
    const [filter, page] = [checkedParam(req, 'filter', FILTER_PARAM), checkedParam(req, 'page', PAGE_PARAM)];
    const kind = kinds === undefined ? '' : checkedParam(req, 'kind', KIND_PARAM);
    const names = await gw.queueNames();
    if (names === null) return null;
    if (kinds === undefined) {
      const list = pageOfQueues(names, filter, page);
      return { list, probes: await probeNamed(gw, list.names) };
    }
    const known = kinds.of(names);
    const list = pageOfQueues(grouped(names, known, kind), filter, page, kind);
    return { list, probes: await probeNamed(gw, list.names), kinds: known };
  };

  r.get('/', async (req: Request, res: Response) => {
    const [mgr, listed] = await Promise.all([probeMgr(gw, { version: true }), probePage(req, ctx.kinds)]);
    const rows = (listed?.probes ?? []).map((p) => ({ ...p, kind: listed?.kinds?.get(p.name) ?? kindOf(p.name, undefined) }));
    await sendPage(res, 'main', {
      ...VIEW_HELPERS,
      mgr: { ...mgr, pid: mgrPidOf(res) },
      version: RQ_PACKAGE_VERSION,
      rows,
      list: listed?.list ?? pageOfQueues([], '', 1),
      kinds: KINDS,
      listed: listed !== null,
      now: formatEpoch(Date.now() / 1000),
      allowNewQueue: config.allowNewQueue,
    });
  });

  r.get('/q.json', async (req: Request, res: Response) => {
    // RQ's reply lists every queue; beyond RQ, `page` or `filter` asks for one page (and says which).
    const asked = params(req);
    const paged = asked['page'] !== undefined || asked['filter'] !== undefined;
    const [mgr, listed] = await Promise.all([
      probeMgr(gw, { version: true }),
      paged ? probePage(req) : probeQueues(gw).then((probes) => probes && { list: undefined, probes }),
    ]);
    const probes = listed?.probes;
    const list = listed?.list;
    const row = (p: QueueProbe): Record<string, unknown> => {
      // Beyond RQ, after RQ's keys: `disk`, the queue's last disk usage measurement (null when none).
      if (!p.up) return { name: p.name, status: 'DOWN', ping: null, pid: null, uptime: null, counts: {}, disk: null };
      const c = p.counts;
      const counts = { prep: c.prep, que: c.que, run: c.run, err: c.err, done: c.done, relayed: c.relayed };
      return { name: p.name, status: p.status, ping: 'pong', pid: p.pid, uptime: p.uptime, counts, disk: p.disk };
    };
    res.json({
      status: mgr.up ? 'OPERATIONAL' : 'DOWN',
      ping: mgr.up ? 'pong' : null,
      pid: mgrPidOf(res),
      uptime: mgr.uptime,
      version: mgr.version,
      time: Math.floor(Date.now() / 1000),
      queues: (probes ?? []).map(row),
      ...(list ? { filter: list.filter, page: list.page, pages: list.pages, total: list.total } : {}),
    });
  });

  r.get('/q.txt', async (_req: Request, res: Response) => {
    const names = (await gw.queueNames()) ?? [];
    res.type('text/plain; charset=utf-8').send([...names].sort().map((n) => `${root}q/${n}.txt`).join('\n'));
  });


  return r;
}
