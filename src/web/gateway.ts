/**
 * The web process's only way to change or ask anything: RPC to rq-mgr's socket and to
 * the queues' sockets (the web never renames or writes message files: the queue process owns them).
 * It also owns the questions answered from the disk without a process: does a queue
 * exist, which process is rq-mgr, is the host in router mode (docs/router.md). Queue
 * names are checked here, before any path is built from them.
 *
 * Two ways to ask, through the typed clients: `probe` answers undefined when there is no
 * answer (the dashboard's probes, which show a queue that does not answer); the other
 * calls wait for a queue process that is restarting, and otherwise throw RQ_UNAVAILABLE
 * or RQ_OUTCOME_UNKNOWN (client/call.ts), a 503.
 */
import fs from 'node:fs';
import path from 'node:path';
import { MgrClient } from '../client/mgr-client.js';
import { QueueClient } from '../client/queue-client.js';
import { isRefusal } from '../client/refusal.js';
import { BUILTIN_QUEUES, isValidQueueName } from '../domain/names.js';
import { RULES_FILE_NAME } from '../router/rules.js';
import { queueLayout, type QueueLayout, type RootLayout } from '../store/layout.js';
import { runningPid } from '../supervisor/pid-file.js';
import { webError } from './web-errors.js';

import { PROBE_TIMEOUT_MS } from '../client/queue-probe.js';

export { PROBE_TIMEOUT_MS };

export interface Gateway {
  root: RootLayout;
  /**
   * The queues' RPC (client/queue-client.ts): a queue process that is restarting is
   * waited for, then RQ_UNAVAILABLE or RQ_OUTCOME_UNKNOWN (a 503); `probe` asks once and
   * answers undefined when the process does not answer.
   */
  queues: QueueClient;
  /** rq-mgr's RPC; its `probe` answers undefined when rq-mgr does not answer. */
  mgr: MgrClient;
  /** The queue that serves message routes for `name` (router mode). */
  routed(name: string): string;
  /** Is there a queue `name` (a valid name with a directory)? */
  queueExists(name: string): boolean;
  /** The layout of an existing queue; a 404 `Queue not found` error otherwise. */
  existing(name: string): QueueLayout;
  /** rq-mgr's pid when `config/queuemgr.pid` names a live rq-mgr; undefined otherwise. */
  mgrPid(): number | undefined;
  /** Every queue rq-mgr knows, custom ones sorted then builtin ones sorted; null if rq-mgr is down. */
  queueNames(): Promise<string[] | null>;
}

/** Is `name` one of the queues rq ships (listed after the custom ones, as RQ did)? */
export function isBuiltinQueue(name: string): boolean {
  return (BUILTIN_QUEUES as readonly string[]).includes(name);
}

export function createGateway(root: RootLayout): Gateway {
  const routerRules = path.join(root.configDir, RULES_FILE_NAME);
  const mgr = new MgrClient(root);
  /** The layout of `name` when it is a valid queue name with a directory. */
  const found = (name: string): QueueLayout | undefined => {
    if (!isValidQueueName(name)) return undefined;
    const q = queueLayout(root, name);
    try {
      return fs.statSync(q.dir).isDirectory() ? q : undefined;
    } catch {
      return undefined;
    }
  };
  return {
    root,
    queues: new QueueClient(root, { timeoutMs: 10_000 }),
    mgr,
    routed: (name) => (name !== 'relay' && name !== 'cleaner' && fs.existsSync(routerRules) ? 'rq_router' : name),
    queueExists: (name) => found(name) !== undefined,
    existing(name) {
      const q = found(name);
      if (q === undefined) throw webError('RQ_QUEUE_NOT_FOUND', 'Queue not found');
      return q;
    },
    mgrPid: () => runningPid(root),
    async queueNames() {
      const names = await mgr.probe('queues', '', PROBE_TIMEOUT_MS);
      if (names === undefined || isRefusal(names)) return null;
      const list = [...new Set(names)];
      return [...list.filter((n) => !isBuiltinQueue(n)).sort(), ...list.filter(isBuiltinQueue).sort()];
    },
  };
}
