/**
 * Operations routes, served even while rq-mgr is down (app.ts mounts them before the
 * rq-mgr check): `/healthz` for load balancers and init systems, and `/metrics` in
 * Prometheus text format (the registry is metrics.ts's, made at the first scrape).
 */
import { Router, type Request, type Response } from 'express';
import type { Registry } from 'prom-client';
import type { WebContext } from '../context.js';
import { probeMgr } from '../queue-info.js';

export function opsRoutes(ctx: WebContext): Router {
  const { gw } = ctx;
  let registry: Promise<Registry> | undefined;
  const r = Router();

  r.get('/healthz', async (_req: Request, res: Response) => {
    const pid = gw.mgrPid();
    if (pid === undefined) {
      res.status(503).json({ status: 'fail', queuemgr: false, reason: 'rq-mgr is not running (config/queuemgr.pid names no live process)' });
      return;
    }
    const mgr = await probeMgr(gw);
    if (!mgr.up) {
      res.status(503).json({ status: 'fail', queuemgr: false, pid, reason: 'rq-mgr does not answer on config/queuemgr.sock' });
      return;
    }
    res.json({ status: 'ok', queuemgr: true, pid, uptime: mgr.uptime });
  });

  r.get('/metrics', async (_req: Request, res: Response) => {
    registry ??= import('../metrics.js').then((m) => m.createMetrics(gw));
    const made = await registry;
    const text = await made.metrics();
    res.type(made.contentType).send(text);
  });

  return r;
}
