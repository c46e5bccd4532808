/**
 * The web process's only way to change or ask anything: RPC to rq-mgr's socket and to
 * the queues' sockets (ARCHITECTURE.md: the web never renames or writes message files).
 * It also owns the questions answered from the disk without a process: does a queue
 * exist, which process is rq-mgr, is the host in router mode (spec/rq.md §7.6). Queue
 * names are checked here, before any path is built from them.
 *
 * Two ways to ask: `queue` and `mgr` give RQ's null when there is no answer (the
 * dashboard's probes, which show a queue that does not answer); `send` and `sendMgr`
 * never do: they wait for a queue process that is restarting, and otherwise throw
 * RQ_UNAVAILABLE or RQ_OUTCOME_UNKNOWN (client/call.ts), a 503.
 */
import fs from 'node:fs';
import path from 'node:path';
import { RESTART_WAIT_MS, callRpc } from '../client/call.js';
import { rpcCall } from '../client/rpc.js';
import { BUILTIN_QUEUES, isValidQueueName } from '../domain/names.js';
import { RULES_FILE_NAME } from '../router/rules.js';
import { queueLayout, type QueueLayout, type RootLayout } from '../store/layout.js';
import { runningPid } from '../supervisor/pid-file.js';
import { PROBE_TIMEOUT_MS } from './queue-info.js';
import { webError } from './web-errors.js';

export interface Gateway {
  root: RootLayout;
  /** rq-mgr's RPC; null when it does not answer (within `timeoutMs`, default 10 s). */
  mgr(command: string, arg?: unknown, timeoutMs?: number): Promise<unknown>;
  /** A queue's RPC; null when its process does not answer. */
  queue(name: string, command: string, arg?: unknown, timeoutMs?: number): Promise<unknown>;
  /**
   * A queue's RPC across a restart of its process: the reply, or RQ_UNAVAILABLE /
   * RQ_OUTCOME_UNKNOWN. `repeatable`: sending it twice does no harm (reads). RQ's create
   * commands announce their id, so a lost reply is settled by it.
   */
  send(name: string, command: string, arg: Record<string, unknown>, o?: { repeatable?: boolean; timeoutMs?: number }): Promise<unknown>;
  /** rq-mgr's RPC: the reply, or RQ_UNAVAILABLE (not sent) / RQ_OUTCOME_UNKNOWN (no reply). */
  sendMgr(command: string, arg: string): Promise<unknown>;
  /** The queue that serves message routes for `name` (router mode, §7.6). */
  routed(name: string): string;
  /** The layout of an existing queue; a 404 `Queue not found` error otherwise. */
  existing(name: string): QueueLayout;
  /** rq-mgr's pid when `config/queuemgr.pid` names a live rq-mgr; undefined otherwise. */
  mgrPid(): number | undefined;
  /** Every queue rq-mgr knows, custom ones sorted then builtin ones sorted; null if rq-mgr is down. */
  queueNames(): Promise<string[] | null>;
}

/** Is `name` one of the queues rq ships (listed after the custom ones, spec/rq.md §7.3)? */
export function isBuiltinQueue(name: string): boolean {
  return (BUILTIN_QUEUES as readonly string[]).includes(name);
}

/** The argument of an RPC: strings go bare (rq-mgr's queue-name commands), the rest as JSON. */
function encodeArg(arg: unknown): string {
  if (arg === undefined) return '';
  return typeof arg === 'string' ? arg : JSON.stringify(arg);
}

export function createGateway(root: RootLayout): Gateway {
  const routerRules = path.join(root.configDir, RULES_FILE_NAME);
  return {
    root,
    mgr: (command, arg, timeoutMs = 10_000) => rpcCall(root.mgrSocket, command, encodeArg(arg), timeoutMs),
    queue: (name, command, arg, timeoutMs = 10_000) => {
      if (!isValidQueueName(name)) return Promise.resolve(null);
      return rpcCall(queueLayout(root, name).socket, command, encodeArg(arg), timeoutMs);
    },
    send: async (name, command, arg, o = {}) => {
      if (!isValidQueueName(name)) throw webError('RQ_QUEUE_NOT_FOUND', 'Queue not found');
      return callRpc(queueLayout(root, name).socket, command, arg, {
        peer: `Queue ${name}`,
        timeoutMs: o.timeoutMs ?? 10_000,
        waitMs: RESTART_WAIT_MS,
        repeatable: o.repeatable === true,
      });
    },
    sendMgr: (command, arg) => callRpc(root.mgrSocket, command, arg, { peer: 'rq-mgr', timeoutMs: 10_000 }),
    routed: (name) => (name !== 'relay' && name !== 'cleaner' && fs.existsSync(routerRules) ? 'rq_router' : name),
    existing(name) {
      if (isValidQueueName(name)) {
        const q = queueLayout(root, name);
        try {
          if (fs.statSync(q.dir).isDirectory()) return q;
        } catch {
          // fall through to not found
        }
      }
      throw webError('RQ_QUEUE_NOT_FOUND', 'Queue not found');
    },
    mgrPid: () => runningPid(root),
    async queueNames() {
      const names = await rpcCall(root.mgrSocket, 'queues', '', PROBE_TIMEOUT_MS);
      if (!Array.isArray(names)) return null;
      const list = [...new Set(names.filter((n): n is string => typeof n === 'string'))];
      return [...list.filter((n) => !isBuiltinQueue(n)).sort(), ...list.filter(isBuiltinQueue).sort()];
    },
  };
}
