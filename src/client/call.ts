/**
 * One request to a queue process (or rq-mgr) that may be restarting: the reply, or an
 * RqError that says what the caller may do next. rq-mgr starts a new queue process soon
 * after one dies; meanwhile the socket refuses connections, and a request in flight when
 * it died gets no reply (rpc.ts tells these apart). So:
 * - a request that reached no process is sent again, for up to `waitMs`;
 * - a request whose reply was lost is sent again only when that is harmless: for a
 *   `repeatable` command, or for a create that announced no id before the process ended
 *   (a create commits only after its announcement, so nothing was made). A create that
 *   announced its id is settled by asking the queue process for that id once one
 *   answers again: there, the create's own reply; not there, it was never committed, and
 *   the create is sent again;
 * - a reply lost because this side stopped waiting (its time limit, an abort) never
 *   counts as "nothing was done": the peer may still be at it.
 * When the request cannot be done now, safely: RQ_UNAVAILABLE (send it again; for a
 * command that is not repeatable, nothing was done). When it may have been done:
 * RQ_OUTCOME_UNKNOWN, whose text names the id a create had allocated.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { RqError } from '../domain/errors.js';
import { isRefusal, refusalCode } from './refusal.js';
import { isOk, rpcRequest, type RpcOutcome } from './rpc.js';

/**
 * How long a front door waits for a queue process that is restarting before it answers
 * RQ_UNAVAILABLE: rq-mgr's first restarts of a queue come within a second; and it is
 * under the 5 s after which RQMS's watchdog answers a request that made no progress.
 */
export const RESTART_WAIT_MS = 4_000;
/** What a client is asked to wait (`Retry-After`, in seconds) before it sends again. */
export const RESTART_RETRY_AFTER_S = 1;
/** The pause between two tries. */
const STEP_MS = 100;
/** RQ's commands that create a message and answer `["ok", <full id>]`. */
const CREATES: ReadonlySet<string> = new Set(['create_message', 'prep_message', 'single_que']);

export interface CallOptions {
  /** Who is asked, at the start of error texts: `Queue hello`, `rq-mgr`. */
  peer: string;
  /** Each try's time limit (default 30 s). */
  timeoutMs?: number;
  /** Try a peer that does not answer for this long (default 0: one try). */
  waitMs?: number;
  signal?: AbortSignal;
  /** Sending it twice does no harm (a read, or a change that ends the same when made twice): a lost reply is asked for again. */
  repeatable?: boolean;
  /**
   * The command creates a message and announces its id; given that id, the reply to give
   * when the message exists. Default: `["ok", id]` for RQ's create commands.
   */
  created?: (id: string) => unknown;
}

/** The `Retry-After` header of a reply to RQ_UNAVAILABLE or RQ_OUTCOME_UNKNOWN (none for other errors). */
export function restartHeaders(e: unknown): Record<string, string> | undefined {
  const restarting = e instanceof RqError && (e.code === 'RQ_UNAVAILABLE' || e.code === 'RQ_OUTCOME_UNKNOWN');
  return restarting ? { 'Retry-After': String(RESTART_RETRY_AFTER_S) } : undefined;
}


/** `command` with `arg` (JSON, or a bare string as rq-mgr's queue commands take), as the file comment says. */
export async function callRpc(socket: string, command: string, arg: object | string, o: CallOptions): Promise<unknown> {
  const created = o.created ?? (CREATES.has(command) ? (id: string): unknown => ['ok', id] : undefined);
  const argument = typeof arg === 'string' ? arg : JSON.stringify(created ? { ...arg, _announce: true } : arg);
  const deadline = Date.now() + (o.waitMs ?? 0);
  const options = { timeoutMs: o.timeoutMs ?? 30_000, announced: created !== undefined, ...(o.signal ? { signal: o.signal } : {}) };
  for (;;) {
    const r = await rpcRequest(socket, command, argument, options);
    if (r.type === 'reply') return r.reply;
    if (r.type === 'lost' && !o.repeatable) {
      if (!r.stopped || created === undefined) throw outcomeUnknown(o.peer, command, r);
      if (r.allocated !== undefined) {
        const exists = await lookUp(socket, r.allocated, deadline, o);
        if (exists === undefined) throw outcomeUnknown(o.peer, command, r);
        if (exists) return created(r.allocated);
      }
    }
    if (Date.now() >= deadline || o.signal?.aborted) {
      throw new RqError('RQ_UNAVAILABLE', `${o.peer} is not answering (${r.why})${o.repeatable ? '' : ', and nothing was done'}: try again`);
    }
    await sleep(STEP_MS);
  }
}

/** Does message `id` exist? Asked until a queue process answers, or undefined at `deadline`. */
async function lookUp(socket: string, id: string, deadline: number, o: CallOptions): Promise<boolean | undefined> {
  const argument = JSON.stringify({ msg_id: id });
  for (;;) {
    const r = await rpcRequest(socket, 'get_message_state', argument, { timeoutMs: o.timeoutMs ?? 30_000, ...(o.signal ? { signal: o.signal } : {}) });
    if (r.type === 'reply' && isOk(r.reply)) return true;
    if (r.type === 'reply' && isRefusal(r.reply) && refusalCode(r.reply) === 'RQ_NOT_FOUND') return false;
    if (Date.now() >= deadline || o.signal?.aborted) return undefined;
    await sleep(STEP_MS);
  }
}

function outcomeUnknown(peer: string, command: string, r: Extract<RpcOutcome, { type: 'lost' }>): RqError {
  const next = r.allocated === undefined ? 'check before you try again' : `the message it was making is ${r.allocated}: ask for it before you try again`;
  return new RqError('RQ_OUTCOME_UNKNOWN', `${peer} gave no reply to ${command} (${r.why}), which may have been done: ${next}`);
}
