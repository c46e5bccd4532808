/**
 * Replies shared by the routes: RQ's redirects (303 with an absolute `Location` built
 * from the Host header) carrying a flash, and the `back` target, which
 * must be a path on this server (an absolute or protocol-relative URL is refused, so a
 * form cannot be used to bounce a user to another site).
 */
import type { Request, Response } from 'express';
import type { MainConfig } from '../domain/main-config.js';
import { setFlash, type Flash } from './flash.js';
import { param } from './params.js';

export interface Responder {
  /** 303 to `target` (a path that already includes the relative root), with a flash. */
  redirect(req: Request, res: Response, target: string, flash?: Flash): void;
  /** The `back` parameter when it is a local path, else the root. */
  back(req: Request): string;
}

export function createResponder(config: MainConfig): Responder {
  return {
    redirect(req, res, target, flash) {
      if (flash) setFlash(res, flash, config.relativeRoot);
      const host = req.headers.host ?? `${config.host}:${config.port}`;
      res.status(303).setHeader('Location', `http://${host}${target}`);
      res.type('text/html; charset=utf-8').send('');
    },
    back(req) {
      const b = param(req, 'back');
      // A local path of printable ASCII only: no other site, and nothing a header cannot carry.
      return b !== undefined && /^\/(?![/\\])[\x21-\x7e]*$/.test(b) ? b : config.relativeRoot;
    },
  };
}
