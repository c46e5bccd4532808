/**
 * What a queue command is (one file per command under commands/, named by its wire
 * name): its argument schema, whether it answers while the queue is admin DOWN, and its
 * handler, which returns the reply exactly as the wire carries it. A refusal is thrown
 * as an RqError; run-command.ts renders it `["fail", text, code]`.
 */
import type { ErrorCode } from '../domain/errors.js';
import type { RpcConnection } from '../rpc/server.js';
import type { Allocated } from '../store/message-store.js';
import type { ArgSchema } from './args.js';
import type { QueueState } from './state.js';

export interface Command<A, R> {
  /** Answers while the queue is admin DOWN, and with no argument at all (an empty one is `{}`). */
  readonly whileDown?: true;
  /** A pull command that needs a pull queue (no script): refused with RQ_NOT_PULL before its argument is read. */
  readonly needsPull?: true;
  /** Its success proves that a write worked: after a full disk, the log then says the disk has room again. */
  readonly writes?: true;
  readonly arg: ArgSchema<A>;
  run(s: QueueState, arg: A, conn: RpcConnection | undefined): R | Promise<R>;
}

/** A command, its types inferred from its schema and its handler. */
export function command<A, R>(c: Command<A, R>): Command<A, R> {
  return c;
}

/** Every refusal: RQ's text, then the stable code (RQ's two-element readers ignore it). */
export type Fail = ['fail', string, ErrorCode];

/**
 * The announcement of a new message's id to a client that asked for it (`"_announce":
 * true`, rpc/server.ts), `shown` as the command's reply names it; before the commit.
 */
export function announcer(arg: Record<string, unknown>, conn: RpcConnection | undefined, shown: (shortId: string) => string): Allocated | undefined {
  if (arg['_announce'] !== true || conn === undefined) return undefined;
  return (shortId) => conn.announce(shown(shortId));
}
