/**
 * What every route module gets from app.ts: the main config, the gateway to rq-mgr and
 * the queues, the shared replies, and the logger.
 */
import type { MainConfig } from '../domain/main-config.js';
import type { Logger } from '../lib/logger.js';
import type { Gateway } from './gateway.js';
import type { Responder } from './respond.js';

export interface WebContext {
  config: MainConfig;
  gw: Gateway;
  respond: Responder;
  log: Logger;
}
