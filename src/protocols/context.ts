/**
 * What every protocol front door is given when it is built: the install, the one client
 * of the queues, the logger, the config, and the namespaces; and the shape of a door's
 * factory. Its own file, so that the doors need not import the module that starts them.
 */
import type net from 'node:net';
import type { MainConfig, ProtocolSection } from '../domain/main-config.js';
import type { Logger } from '../lib/logger.js';
import type { RootLayout } from '../store/layout.js';
import type { Namespaces } from './door-access.js';
import type { PullClient } from './pull-client.js';

/** What a protocol module gets to build its server. */
export interface ProtocolContext {
  root: RootLayout;
  client: PullClient;
  log: Logger;
  /** The install's whole config.json (allowed hosts, and the other doors' sections). */
  main: MainConfig;
  /** The protocol's `protocols.<name>` section (its own keys in `raw`). */
  section: ProtocolSection;
  /** lmstfy's namespaces and tokens, the same object for every door. */
  namespaces: Namespaces;
}

/** Builds a protocol's server (not yet listening); throws RqError RQ_CONFIG for a bad key of its section. */
export type ProtocolFactory = (ctx: ProtocolContext) => net.Server;
