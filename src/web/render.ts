/**
 * Server-side HTML: ejs templates in `src/web/views/`, drawn inside `layout.ejs` (RQ's
 * layout). `<%= %>` escapes everything a page shows, scripts' output and flash
 * texts included; no template uses `<%-` on data from a request or a message. Pages are
 * sent with one `res.send`, so headers and body leave together (some clients read a reply with a single read).
 */
import path from 'node:path';
import type { Response } from 'express';
import ejs from 'ejs';
import { PACKAGE_ROOT } from '../lib/install-root.js';
import type { Flash } from './flash.js';

const VIEWS_DIR = path.join(PACKAGE_ROOT, 'src/web/views');
export const PUBLIC_DIR = path.join(PACKAGE_ROOT, 'src/web/public');

/** What every page gets: the URL prefix, the environment name and the pending flash. */
export interface PageContext {
  root: string;
  env: string;
  flash: Flash;
  /** The queue name of the route, for the title `RQ :: <q>`. */
  queue?: string;
}

/** The locals of a view: the page context, its `urlFor`, and the route's own `locals`. */
function viewLocals(res: Response, locals: Record<string, unknown>): Record<string, unknown> {
  const ctx = res.locals['page'] as PageContext;
  return { ...ctx, urlFor: (...parts: string[]) => urlFor(ctx.root, ...parts), ...locals };
}

/** `<root>q/<q>/<id>/...`: each part percent-encoded, so a name can never break a URL. */
export function urlFor(root: string, ...parts: string[]): string {
  return root + parts.map((p) => encodeURIComponent(p)).join('/');
}

async function renderView(view: string, locals: Record<string, unknown>): Promise<string> {
  return ejs.renderFile(path.join(VIEWS_DIR, `${view}.ejs`), locals, { cache: true, async: false, rmWhitespace: false });
}

/** Render `view` inside the layout and send it with `status`. */
export async function sendPage(res: Response, view: string, locals: Record<string, unknown> = {}, status = 200): Promise<void> {
  const all = viewLocals(res, locals);
  const body = await renderView(view, all);
  const html = await renderView('layout', { ...all, body });
  res.status(status).type('text/html; charset=utf-8').send(html);
}

/** Render a standalone page (the tail viewer has no layout). */
export async function sendBare(res: Response, view: string, locals: Record<string, unknown> = {}): Promise<void> {
  const html = await renderView(view, viewLocals(res, locals));
  res.type('text/html; charset=utf-8').send(html);
}
