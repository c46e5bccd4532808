/**
 * The web application (web-main.ts listens). It assembles the request pipeline
 * (pipeline.ts), the body parsers, static files, the route modules in the order
 * routing needs (literal queue routes before `/q/:name/:msg_id`), and the one error
 * handler: RqError → status and reason through web-errors.ts, body-parser failures and
 * path parameters that are not percent-encoded UTF-8 → clear 4xx, anything else → 500,
 * logged. The reply is `["fail", reason]` for a `.json` route or `x_format=json`; else
 * every 404 is the Not Found page; any other status is a page for a browser (its Accept
 * prefers HTML) and RQ's plain `<status> - <text>` for curl, scripts and RQ's clients.
 * Every error reply names its stable code in `X-RQ-Error` (RQ_UNAVAILABLE: send again;
 * RQ_OUTCOME_UNKNOWN: it may have been done), and a queue process that is restarting
 * gets `Retry-After`.
 *
 * The web only reads message files and logs; every change goes through an RPC.
 */
import http from 'node:http';
import express, { type Express, type NextFunction, type Request, type Response } from 'express';
import { restartHeaders } from '../client/call.js';
import { RqError, coerceError } from '../domain/errors.js';
import type { MainConfig } from '../domain/main-config.js';
import type { Logger } from '../lib/logger.js';
import type { RootLayout } from '../store/layout.js';
import type { WebContext } from './context.js';
import { createGateway } from './gateway.js';
import { budgeted, multipart, parseQuery, wantsJson } from './params.js';
import { allowedHost, allowedIps, basicAuth, baseHeaders, methodsAndHeaders, pageSetup, relativeRoot, requireMgr, sameOrigin } from './pipeline.js';
import { QueueKinds } from './queue-kinds.js';
import { PUBLIC_DIR, sendPage } from './render.js';
import { createResponder } from './respond.js';
import { bulkRoutes } from './routes/bulk.js';
import { fileRoutes } from './routes/files.js';
import { historyRoutes } from './routes/history.js';
import { messageRoutes } from './routes/messages.js';
import { opsRoutes } from './routes/ops.js';
import { overviewRoutes } from './routes/overview.js';
import { pullQueueActions } from './routes/pull-queue.js';
import { queueRoutes } from './routes/queues.js';
import { bodyOf, reasonOf, statusOf, webError } from './web-errors.js';

/**
 * urlencoded and JSON bodies are held in memory up to this; RPC payloads must stay
 * < 100 MB (the RPC frame's 8-digit length). All bodies together are held within the body budget (budgeted).
 */
const BODY_LIMIT = 64 * 1024 * 1024;

export interface AppDeps {
  root: RootLayout;
  config: MainConfig;
  log: Logger;
}

/** body-parser's failures (they carry `type` and a 4xx `status`) as clear RqErrors. */
function bodyParserError(err: unknown): RqError | undefined {
  const e = err as { type?: unknown; status?: unknown; message?: unknown };
  if (typeof e?.type !== 'string' || typeof e.status !== 'number') return undefined;
  if (e.type === 'entity.too.large') return webError('RQ_TOO_LARGE', `Request body is over the limit of ${BODY_LIMIT} bytes`);
  if (e.type === 'entity.parse.failed') return webError('RQ_BAD_REQUEST', `Bad JSON body: ${String(e.message)}`);
  if (e.type === 'encoding.unsupported') return webError('RQ_ENCODED_BODY', 'A compressed request body (Content-Encoding other than identity) is not read: send it uncompressed');
  return webError('RQ_BAD_REQUEST', `Bad request body: ${String(e.message)}`);
}

/** Express's router could not percent-decode a path parameter (`%zz`, a lone `%`, bytes that are not UTF-8). */
function pathDecodeError(err: unknown): RqError | undefined {
  if (!(err instanceof URIError)) return undefined;
  return webError('RQ_BAD_REQUEST', `The path is not percent-encoded UTF-8 (${err.message})`);
}

/**
 * The paths of RQ's `.json` routes: `/q.json`, `/q/<q>.json`, `/q/<q>/done.json` and
 * `config.json`, `/q/<q>/<id>.json`, `/q/<q>/<id>/state.json`; beyond RQ, a bulk action's
 * `/q/<q>/bulk/<job>.json`, `/history.json` and `/q/<q>/history.json`. A log or attachment
 * named `*.json` is a file, not one of them.
 */
const JSON_ROUTE = /^\/q(\/[^/]+){0,2}\.json$|^\/q\/[^/]+\/([^/]+\/state|bulk\/[^/]+)\.json$|^\/history\.json$/;

/** How an error is answered (see the file comment). */
function errorStyle(req: Request): 'json' | 'page' | 'plain' {
  if (JSON_ROUTE.test(req.path) || wantsJson(req)) return 'json';
  return req.accepts(['text/plain', 'text/html']) === 'text/html' ? 'page' : 'plain';
}

export function createApp(deps: AppDeps): Express {
  const { root, config, log } = deps;
  const gw = createGateway(root);
  const ctx: WebContext = { config, gw, respond: createResponder(config), log, kinds: new QueueKinds(root) };
  const app = express();
  app.disable('x-powered-by');
  app.disable('etag');
  app.set('query parser', parseQuery);

  app.use(baseHeaders(), allowedIps(config), allowedHost(config), methodsAndHeaders(), sameOrigin(), relativeRoot(config), basicAuth(config), pageSetup(config));
  app.use(express.static(PUBLIC_DIR, { index: false, redirect: false, etag: false }));
  // Nested form keys go as deep as in query strings and multipart fields (params.ts).
  // Compressed bodies are refused (415): what arrives is what the body budget counts.
  const urlencoded = { extended: true, limit: BODY_LIMIT, parameterLimit: 10_000, depth: 8, inflate: false };
  app.use(budgeted(express.urlencoded(urlencoded)));
  app.use(budgeted(express.json({ limit: BODY_LIMIT, strict: false, inflate: false })));
  app.use(multipart());
  app.use(opsRoutes(ctx));
  app.use(requireMgr(gw));
  app.use(overviewRoutes(ctx), queueRoutes(ctx), bulkRoutes(ctx), historyRoutes(ctx), pullQueueActions(ctx), fileRoutes(ctx), messageRoutes(ctx));

  app.use((_req: Request, _res: Response, next: NextFunction) => next(webError('RQ_NOT_FOUND', 'no such route')));
  app.use((err: unknown, req: Request, res: Response, _next: NextFunction) => {
    if (res.headersSent) {
      res.destroy();
      return;
    }
    const known = err instanceof RqError ? err : (bodyParserError(err) ?? pathDecodeError(err));
    if (!known) log.error({ err: coerceError(err), url: req.originalUrl, request_id: res.locals['requestId'] }, 'web route failed');
    const failure = known ?? webError('RQ_IO', 'Internal Server Error');
    const status = statusOf(failure);
    const reason = reasonOf(failure);
    res.setHeader('X-RQ-Error', failure.code);
    const retry = restartHeaders(failure);
    if (retry) res.set(retry);
    if (status === 404) log.debug({ url: req.originalUrl, reason }, 'not found');
    const style = errorStyle(req);
    if (style === 'json') {
      res.status(status).json(['fail', reason]);
      return;
    }
    if (style === 'plain' && status !== 404) {
      res.status(status).type('text/html; charset=utf-8').send(bodyOf(failure));
      return;
    }
    const page = status === 404 ? sendPage(res, 'not_found', { reason }, 404) : sendPage(res, 'error', { status, title: http.STATUS_CODES[status], reason }, status);
    page.catch((renderErr: unknown) => {
      log.error({ err: coerceError(renderErr) }, 'cannot render the error page');
      res.status(status).type('text/html; charset=utf-8').send(bodyOf(failure));
    });
  });
  return app;
}
