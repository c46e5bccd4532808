/**
 * The dashboard's page of a pull queue (one with no script, made by a front door or by
 * hand: queue-kinds.ts), which `GET /q/:name` (queues.ts) hands here, and its buttons.
 * The page shows the queue's status and its messages as the pull model sees them, one
 * section at a time, paged: ready, delayed, leased (owner, since, deadline, tries left)
 * and the dead letter; each row with a short preview of its payload (payload-preview.ts)
 * and a link to the whole. The counts come from the queue's `pull_stats`, a page from its
 * `list` command (offset and limit: page 2,000 costs what page 1 does).
 * Its buttons are POSTs through queue commands, each confirmed first and answered with a
 * flash: `/q/:name/pull/respawn` (`respawn` of one dead letter, back to ready) and
 * `/q/:name/pull/delete` (`remove`, in any state). There is no Run Now and no New
 * Message: external workers take the messages, and the front doors make them.
 */
import path from 'node:path';
import { Router, type Request, type Response } from 'express';
import * as v from 'valibot';
import { asRq, isRefusal } from '../../client/refusal.js';
import { probeQueue } from '../../client/queue-probe.js';
import type { PulledView, PullStats } from '../../rpc/queue-api.js';
import type { QueueLayout } from '../../store/layout.js';
import type { WebContext } from '../context.js';
import { VIEW_HELPERS, formatEpoch } from '../format.js';
import { PROBE_TIMEOUT_MS } from '../gateway.js';
import { PAGE_PARAM, checkedParam, param } from '../params.js';
import { readPreview, type PayloadPreview } from '../payload-preview.js';
import type { QueueKind } from '../queue-kinds.js';
import { sendPage } from '../render.js';
import { webError } from '../web-errors.js';

/** Messages per page of a section. */
const PAGE_SIZE = 50;
/** The sections of the page, in order: `pull_stats` counts and `list` lists each. */
const SECTIONS = ['ready', 'delayed', 'leased', 'dead'] as const;
type Section = (typeof SECTIONS)[number];
/** The `state` parameter of the page: a section ('' or absent: ready). */
const SECTION_PARAM = v.optional(v.picklist(['', ...SECTIONS], `one of ${SECTIONS.join(', ')}`), '');

/** An epoch-ms time as the pages show times (UTC); `never` for null. */
const formatMs = (ms: number | null): string => (ms === null ? 'never' : formatEpoch(ms / 1000));

/** Deliveries left before a lease that ends sends the message to the dead letter: its tries, else max_count − count; null for no limit. */
const triesLeft = (m: PulledView): number | null => m.tries ?? (m.max_count > 0 ? Math.max(0, m.max_count - m.count) : null);

interface PullRow {
  view: PulledView;
  preview: PayloadPreview;
}

/** The page of pull queue `q` (kind: its kind and door) that `req` asks for. */
export async function sendPullQueuePage(ctx: WebContext, req: Request, res: Response, q: QueueLayout, kind: QueueKind): Promise<void> {
  const { gw } = ctx;
  const section: Section = checkedParam(req, 'state', SECTION_PARAM) || 'ready';
  const requested = checkedParam(req, 'page', PAGE_PARAM);
  const [probe, stats] = await Promise.all([probeQueue(gw, q.name), gw.queues.probe(q.name, 'pull_stats', {}, PROBE_TIMEOUT_MS)]);
  const counts: PullStats | undefined = stats !== undefined && !isRefusal(stats) ? stats[1] : undefined;
  let listing: { state: Section; page: number; pages: number; total: number; rows: PullRow[]; error?: string } | undefined;
  if (counts !== undefined) {
    const total = counts[section];
    const pages = Math.max(1, Math.ceil(total / PAGE_SIZE));
    const page = Math.min(requested, pages);
    const reply = await gw.queues.probe(q.name, 'list', { which: section, offset: (page - 1) * PAGE_SIZE, limit: PAGE_SIZE }, PROBE_TIMEOUT_MS * 5);
    const views = reply !== undefined && !isRefusal(reply) ? reply[1] : undefined;
    const rows = await Promise.all(
      (views ?? []).map(async (view) => ({ view, preview: await readPreview(path.join(q.msgDir(view.state, view.id), 'attach', 'payload')) })),
    );
    listing = { state: section, page, pages, total, rows, ...(views === undefined ? { error: 'The queue did not list its messages; try again.' } : {}) };
  }
  await sendPage(res, 'pull_queue', {
    ...VIEW_HELPERS,
    name: q.name,
    kind,
    probe,
    admin: probe.up ? probe.admin : null,
    counts,
    sections: SECTIONS,
    listing,
    pageSize: PAGE_SIZE,
    formatMs,
    triesLeft,
  });
}

/** The pull queue page's buttons (see the file comment). */
export function pullQueueActions(ctx: WebContext): Router {
  const { gw, respond } = ctx;
  const r = Router();

  /** The message id of the form (`id`), checked enough to be sent. */
  const idOf = (req: Request): string => {
    const id = param(req, 'id');
    if (id === undefined || id === '' || id.length > 255) throw webError('RQ_BAD_REQUEST', 'The form must send id, the message id');
    return id;
  };

  r.post('/q/:name/pull/respawn', async (req: Request, res: Response) => {
    const q = gw.existing(String(req.params['name']));
    const id = idOf(req);
    const reply = await gw.queues.send(q.name, 'respawn', { ref: id });
    const flash = isRefusal(reply)
      ? { error: `Message ${id} not respawned: ${asRq(reply)[1]}` }
      : reply[1] === 1
        ? { notice: `Message ${id} respawned: it is ready again` }
        : { error: `Message ${id} is not in the dead letter (any more): nothing respawned` };
    respond.redirect(req, res, respond.back(req), flash);
  });

  r.post('/q/:name/pull/delete', async (req: Request, res: Response) => {
    const q = gw.existing(String(req.params['name']));
    const id = idOf(req);
    const reply = await gw.queues.send(q.name, 'remove', { ref: id });
    const flash = isRefusal(reply) ? { error: `Message ${id} not deleted: ${asRq(reply)[1]}` } : { notice: `Message ${id} deleted` };
    respond.redirect(req, res, respond.back(req), flash);
  });

  return r;
}
