/**
 * What every route module gets from app.ts: the main config, the gateway to rq-mgr and
 * the queues, the shared replies, the logger, and the queues' kinds.
 */
import type { MainConfig } from '../domain/main-config.js';
import type { Logger } from '../lib/logger.js';
import type { Gateway } from './gateway.js';
import type { QueueKinds } from './queue-kinds.js';
import type { Responder } from './respond.js';

export interface WebContext {
  config: MainConfig;
  gw: Gateway;
  respond: Responder;
  log: Logger;
  /** Each queue's kind (built-in, script, pull) and door, read from its config.json. */
  kinds: QueueKinds;
}
