/**
 * The History pages: `/q/:name/history` (one queue) and `/history` (every queue of the
 * install, summed), each with a `.json` variant, over `?range=hour|day|week` (default
 * hour); and the chart library they draw with, uPlot, served from node_modules under
 * `/vendor/uplot/`. A queue's series is its `history` command's reply (the current
 * minute included; a put-away queue answers without loading). The install's series is
 * read here from the queues' `history.bin` files (domain/history-layout.ts): one
 * positioned read of one ring per queue that has the file, no RPC, so it shows the
 * minutes the queues have written (the current one once it ends). The page is a table of
 * the numbers; js/history.js draws the charts from the `.json` variant.
 */
import fsp from 'node:fs/promises';
import path from 'node:path';
import { Router, type Request, type Response } from 'express';
import * as v from 'valibot';
import { asRq, isRefusal } from '../../client/refusal.js';
import { HISTORY_FILE, RANGES, RECORD_BYTES, RINGS, addRing, emptyPeriods, seriesOf, type HistoryRange, type HistorySeries } from '../../domain/history-layout.js';
import { PACKAGE_ROOT } from '../../lib/install-root.js';
import { queueLayout, type RootLayout } from '../../store/layout.js';
import type { WebContext } from '../context.js';
import { VIEW_HELPERS } from '../format.js';
import { checkedParam } from '../params.js';
import { sendPage } from '../render.js';
import { dump, webError } from '../web-errors.js';

const RANGE_PARAM = v.optional(v.picklist(RANGES, `one of ${RANGES.join(', ')}`), 'hour');
/** The files of uPlot the pages use, by the name they are served under. */
const UPLOT_DIR = path.join(PACKAGE_ROOT, 'node_modules/uplot/dist');
const UPLOT_FILES = new Set(['uPlot.iife.min.js', 'uPlot.min.css']);
/** Files read at once for the install's series. */
const READS_AT_ONCE = 64;

/** The install's series: the rings of `range` of every queue with a history file, summed. */
async function installSeries(root: RootLayout, names: readonly string[], range: HistoryRange): Promise<{ queues: number; series: HistorySeries }> {
  const periods = emptyPeriods(range, Date.now());
  const ring = RINGS[range];
  let queues = 0;
  for (let i = 0; i < names.length; i += READS_AT_ONCE) {
    const rings = await Promise.all(names.slice(i, i + READS_AT_ONCE).map((n) => readRing(path.join(queueLayout(root, n).dir, HISTORY_FILE), ring.offset, ring.slots * RECORD_BYTES)));
    for (const bytes of rings) {
      if (bytes === undefined) continue;
      queues++;
      addRing(periods, range, bytes);
    }
  }
  return { queues, series: seriesOf(range, periods) };
}

/** `length` bytes at `offset` of a file; undefined when there is no such file. */
async function readRing(file: string, offset: number, length: number): Promise<Buffer | undefined> {
  let fh;
  try {
    fh = await fsp.open(file, 'r');
  } catch {
    return undefined;
  }
  try {
    const buf = Buffer.alloc(length);
    const { bytesRead } = await fh.read(buf, 0, length, offset);
    return buf.subarray(0, bytesRead);
  } finally {
    await fh.close();
  }
}

export function historyRoutes(ctx: WebContext): Router {
  const { gw } = ctx;
  const r = Router();

  r.get('/vendor/uplot/:file', async (req: Request, res: Response) => {
    const file = String(req.params['file']);
    if (!UPLOT_FILES.has(file)) throw webError('RQ_NOT_FOUND', 'no such file');
    res.setHeader('Cache-Control', 'public, max-age=86400');
    await new Promise<void>((resolve, reject) => res.sendFile(path.join(UPLOT_DIR, file), (e) => (e ? reject(e) : resolve())));
  });

  const install = async (req: Request): Promise<{ queues: number; series: HistorySeries }> => {
    const range = checkedParam(req, 'range', RANGE_PARAM);
    return installSeries(gw.root, (await gw.queueNames()) ?? [], range);
  };
  r.get('/history.json', async (req: Request, res: Response) => {
    const { queues, series } = await install(req);
    res.json({ queues, ...series });
  });
  r.get('/history', async (req: Request, res: Response) => {
    const { queues, series } = await install(req);
    await sendPage(res, 'history', { ...VIEW_HELPERS, name: undefined, queues, series, ranges: RANGES });
  });

  const ofQueue = async (req: Request): Promise<{ name: string; series: HistorySeries }> => {
    const q = gw.existing(String(req.params['name']));
    const range = checkedParam(req, 'range', RANGE_PARAM);
    const reply = await gw.queues.send(q.name, 'history', { range });
    if (isRefusal(reply)) throw webError('RQ_PROTOCOL', `Queue ${q.name} answered ${dump(asRq(reply))}`);
    return { name: q.name, series: reply };
  };
  r.get('/q/:name/history.json', async (req: Request, res: Response) => {
    const { series } = await ofQueue(req);
    res.json(series);
  });
  r.get('/q/:name/history', async (req: Request, res: Response) => {
    const { name, series } = await ofQueue(req);
    await sendPage(res, 'history', { ...VIEW_HELPERS, name, queue: name, queues: 1, series, ranges: RANGES });
  });

  return r;
}
