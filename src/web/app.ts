/**
 * The web application (no `listen`; web-main.ts does that). For now it serves what
 * operators and `check_rq` need to see that rq is up: the main page with the status
 * line `QUEUEMGR: OPERATIONAL` (spec/rq.md §7.4), `/q.txt` and `/q/<q>.txt`. It only
 * reads: every question goes to rq-mgr's or a queue's socket.
 */
import path from 'node:path';
import express, { type Express, type Request, type Response } from 'express';
import { rpcCall } from '../client/rpc.js';
import type { MainConfig } from '../domain/main-config.js';
import { isValidQueueName } from '../domain/names.js';
import type { RootLayout } from '../store/layout.js';
import { queueLayout } from '../store/layout.js';

export interface AppDeps {
  root: RootLayout;
  config: MainConfig;
}

const BUILTIN = new Set(['relay', 'webhook', 'cleaner', 'rq_router']);

const escapeHtml = (s: string): string =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

export function createApp(deps: AppDeps): Express {
  const { root, config } = deps;
  const mgrSocket = path.join(root.configDir, 'queuemgr.sock');
  const app = express();
  app.disable('x-powered-by');
  app.set('strict routing', false);
  // `//q/x.txt` is `/q/x.txt` (check_rq asks for the former, spec/rq.md §7.1).
  app.use((req, _res, next) => {
    req.url = req.url.replace(/^\/{2,}/, '/').replace(/([^:])\/{2,}/g, '$1/');
    next();
  });

  async function queueNames(res: Response): Promise<string[] | undefined> {
    const names = await rpcCall(mgrSocket, 'queues');
    if (!Array.isArray(names)) {
      res.status(503).type('text/plain').send('503 - QueueMgr not running');
      return undefined;
    }
    const list = names.filter((n): n is string => typeof n === 'string');
    return [...list.filter((n) => !BUILTIN.has(n)).sort(), ...list.filter((n) => BUILTIN.has(n)).sort()];
  }

  app.get('/', async (_req: Request, res: Response) => {
    const names = await queueNames(res);
    if (!names) return;
    const [pid, uptime] = [process.ppid, ((await rpcCall(mgrSocket, 'uptime')) as [number] | null)?.[0] ?? '-'];
    const rows = await Promise.all(
      names.map(async (n) => {
        const status = ((await rpcCall(queueLayout(root, n).socket, 'status', '', 2000)) as [string] | null)?.[0] ?? 'DOWN';
        const cls = status === 'UP' ? 'green' : 'red';
        return `<tr><td><a href="${config.relativeRoot}q/${encodeURIComponent(n)}">${escapeHtml(n)}</a></td><td><span class="${cls}" id="status-${escapeHtml(n)}">${escapeHtml(status)}</span></td></tr>`;
      }),
    );
    res.type('html').send(
      `<!DOCTYPE html><html><head><meta charset="utf-8"><title>RQ</title></head><body class="${escapeHtml(config.env ?? '')}">\n` +
        `<table><tr><th><tt>QUEUEMGR:<span class="green" id="status">OPERATIONAL</span></tt></th>` +
        `<th>PID: <span id="pid">${pid}</span></th><th>UPTIME: <span id="uptime">${uptime}</span></th>` +
        `<th>VERSION: <span id="version">v1.18.3</span></th></tr></table>\n` +
        `<table id="queue-list">${rows.join('\n')}</table>\n<span id="env">${escapeHtml(config.env ?? '')}</span></body></html>\n`,
    );
  });

  app.get('/q.txt', async (_req: Request, res: Response) => {
    const names = await queueNames(res);
    if (!names) return;
    res.type('text/plain; charset=utf-8').send([...names].sort().map((n) => `${config.relativeRoot}q/${n}.txt`).join('\n'));
  });

  app.get('/q/:name.txt', async (req: Request, res: Response) => {
    const name = String(req.params['name']);
    if (!isValidQueueName(name)) {
      res.status(404).type('text/plain').send('404 - Queue not found');
      return;
    }
    const sock = queueLayout(root, name).socket;
    const [status, uptime, counts] = await Promise.all([
      rpcCall(sock, 'status', '', 5000),
      rpcCall(sock, 'uptime', '', 5000),
      rpcCall(sock, 'num_messages', '{}', 5000),
    ]);
    if (!Array.isArray(status)) {
      res.status(500).type('text/plain').send(`500 - queue ${name} is not answering\n`);
      return;
    }
    res.type('text/plain; charset=utf-8');
    if (status[0] === 'DOWN') {
      res.send('status: DOWN\n');
      return;
    }
    const c = (counts ?? {}) as Record<string, number>;
    res.send(
      `status: ${String(status[0])}\nuptime: ${String((uptime as [number] | null)?.[0] ?? 0)}\n\n` +
        `prep: ${c['prep'] ?? 0}\nque: ${c['que'] ?? 0}\nrun: ${c['run'] ?? 0}\n\n` +
        `done: ${c['done'] ?? 0}\nerr: ${c['err'] ?? 0}\nrelayed: ${c['relayed'] ?? 0}\n`,
    );
  });

  app.use((req: Request, res: Response) => {
    res.status(404).type('text/plain').send(`Not Found: ${req.path}`);
  });
  return app;
}
