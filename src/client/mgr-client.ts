/**
 * The typed client of rq-mgr's RPC (rpc/mgr-api.ts). `send` waits for nothing and answers
 * the reply, refusals included, or throws RQ_UNAVAILABLE (not sent) or RQ_OUTCOME_UNKNOWN
 * (no reply) as client/call.ts says; `probe` answers undefined when rq-mgr does not answer
 * (the dashboard's questions, and the checks that rq-mgr is up).
 */
import { RqError } from '../domain/errors.js';
import type { MgrApi, MgrCommand, MgrReplyOf } from '../rpc/mgr-api.js';
import type { RootLayout } from '../store/layout.js';
import { callRpc } from './call.js';
import { isRefusal } from './refusal.js';

/** The commands whose reply is an object, not an array. */
const OBJECT_REPLIES: ReadonlySet<MgrCommand> = new Set<MgrCommand>(['restarts']);

function isMgrReply<K extends MgrCommand>(command: K, reply: unknown): reply is MgrReplyOf<K> {
  if (isRefusal(reply) || !OBJECT_REPLIES.has(command)) return Array.isArray(reply);
  return typeof reply === 'object' && reply !== null && !Array.isArray(reply);
}

export class MgrClient {
  private readonly socket: string;

  constructor(root: RootLayout) {
    this.socket = root.mgrSocket;
  }

  /** The reply to `command` (default time limit 10 s). `repeatable`: sending it twice does no harm, so a lost reply is asked for again. */
  async send<K extends MgrCommand>(command: K, arg: MgrApi[K]['arg'], o: { timeoutMs?: number; repeatable?: boolean } = {}): Promise<MgrReplyOf<K>> {
    const reply = await callRpc(this.socket, command, arg, { peer: 'rq-mgr', timeoutMs: o.timeoutMs ?? 10_000, repeatable: o.repeatable === true });
    if (!isMgrReply(command, reply)) throw new RqError('RQ_PROTOCOL', `rq-mgr answered ${JSON.stringify(reply)} to ${command}`);
    return reply;
  }

  /** Ask once: the reply, or undefined when rq-mgr did not answer within `timeoutMs` (or answered nonsense). */
  async probe<K extends MgrCommand>(command: K, arg: MgrApi[K]['arg'], timeoutMs: number): Promise<MgrReplyOf<K> | undefined> {
    try {
      return await this.send(command, arg, { timeoutMs, repeatable: true });
    } catch (e) {
      if (e instanceof RqError && (e.code === 'RQ_UNAVAILABLE' || e.code === 'RQ_PROTOCOL')) return undefined;
      throw e;
    }
  }
}
