/**
 * The typed client of the queue processes: one method per command of their RPC, typed by
 * the map in rpc/queue-api.ts, so a caller names no command by string and casts no reply.
 * Every call goes through client/call.ts: a queue process that is restarting is waited
 * for (then RQ_UNAVAILABLE, or RQ_OUTCOME_UNKNOWN for a change that may have been made),
 * a read is asked again when its reply was lost, and a create is settled by the id it
 * announced. The methods answer the reply's value; a refusal is thrown as a Refused (an
 * RqError with the refusal's stable code), and a reply of the wrong shape as RQ_PROTOCOL.
 *
 * Two more ways to call, for the callers that need the reply itself: `send` answers the
 * typed reply, refusals included (a front door that passes the reply on to its client),
 * and `probe` asks once, without waiting, and answers undefined when nobody answers (the
 * dashboard, which shows a queue that does not answer).
 *
 * A name that cannot be a queue's is refused (RQ_QUEUE_NOT_FOUND) before a path is built
 * from it; front doors check names first, each with its own refusal text.
 */
import { RqError } from '../domain/errors.js';
import type { MessageInput } from '../domain/message.js';
import { isValidQueueName } from '../domain/names.js';
import type { State } from '../domain/states.js';
import type {
  Answer,
  ArgOf,
  AttachArg,
  CleanReport,
  ConfigView,
  Counts,
  DeadLetter,
  LeaseArg,
  ListedMessage,
  MessageStatus,
  MessageView,
  MessagesArg,
  PublishArg,
  PullResult,
  PullStats,
  PulledView,
  QueueCommand,
  QueueStatus,
  QueueStatusText,
  ReplyOf,
  SearchArg,
  SearchResult,
} from '../rpc/queue-api.js';
import type { CleanOverride } from '../domain/retention.js';
import { queueLayout, type RootLayout } from '../store/layout.js';
import { RESTART_WAIT_MS, callRpc } from './call.js';
import { Refused, isRefusal } from './refusal.js';

export interface QueueCallOptions {
  /** Each try's time limit (default: the client's). */
  timeoutMs?: number;
  /** How long to wait for a queue process that is restarting (default: the client's); 0: one try. */
  waitMs?: number;
  /** Aborting stops waiting: closing the connection ends a wait in the queue process too. */
  signal?: AbortSignal;
}

/** A create's call: given the id it announced, its reply when that message exists (client/call.ts). */
interface SendOptions extends QueueCallOptions {
  created?: (id: string) => unknown;
}

export interface QueueClientOptions {
  /** Each try's time limit (default 30 s). */
  timeoutMs?: number;
  /** How long to wait for a queue process that is restarting (default RESTART_WAIT_MS). */
  waitMs?: number;
  /** Who is asked, at the start of error texts (default `Queue <name>`). */
  peer?: (queue: string) => string;
}

/**
 * The commands that may be sent again after their reply was lost: reads, and changes
 * that end the same when made twice. A lease made twice leaves the first one's message
 * leased until its TTR, as any lease whose worker went away.
 */
const REPEATABLE: ReadonlySet<QueueCommand> = new Set<QueueCommand>([
  ...['ping', 'uptime', 'status', 'config', 'num_messages', 'messages', 'search', 'stats', 'history'] as const,
  ...['get_message', 'get_message_state', 'get_message_status'] as const,
  ...['lease', 'cancel_wait', 'peek', 'list', 'pull_stats', 'result_wait', 'set', 'touch'] as const,
]);
/** The commands whose reply is a bare array (not `["ok", value]`), and those whose reply is an object. */
const ARRAY_REPLIES: ReadonlySet<QueueCommand> = new Set<QueueCommand>(['ping', 'uptime', 'status', 'messages']);
const OBJECT_REPLIES: ReadonlySet<QueueCommand> = new Set<QueueCommand>(['num_messages', 'stats', 'host_stats', 'history']);

/** Has `reply` the shape the map gives `command` (a refusal, or its answer's outer shape)? */
function isReplyOf<K extends QueueCommand>(command: K, reply: unknown): reply is ReplyOf<K> {
  if (isRefusal(reply)) return true;
  if (OBJECT_REPLIES.has(command)) return typeof reply === 'object' && reply !== null && !Array.isArray(reply);
  if (ARRAY_REPLIES.has(command)) return Array.isArray(reply);
  return Array.isArray(reply) && reply.length === 2 && reply[0] === 'ok';
}

export class QueueClient {
  private readonly root: RootLayout;
  private readonly o: QueueClientOptions;

  constructor(root: RootLayout, o: QueueClientOptions = {}) {
    this.root = root;
    this.o = o;
  }

  /** The reply to `command`, refusals included; RQ_UNAVAILABLE or RQ_OUTCOME_UNKNOWN when none came (client/call.ts). */
  async send<K extends QueueCommand>(queue: string, command: K, arg: ArgOf<K>, o: SendOptions = {}): Promise<ReplyOf<K>> {
    if (!isValidQueueName(queue)) throw new RqError('RQ_QUEUE_NOT_FOUND', `invalid queue name ${JSON.stringify(queue)}`);
    const peer = this.o.peer?.(queue) ?? `Queue ${queue}`;
    const reply = await callRpc(queueLayout(this.root, queue).socket, command, arg, {
      peer,
      timeoutMs: o.timeoutMs ?? this.o.timeoutMs ?? 30_000,
      waitMs: o.waitMs ?? this.o.waitMs ?? RESTART_WAIT_MS,
      repeatable: REPEATABLE.has(command),
      ...(o.signal ? { signal: o.signal } : {}),
      ...(o.created ? { created: o.created } : {}),
    });
    if (!isReplyOf(command, reply)) throw new RqError('RQ_PROTOCOL', `${peer} answered ${JSON.stringify(reply)} to ${command}`);
    return reply;
  }

  /** The reply to `command` when it is not a refusal; a refusal is thrown (Refused). */
  async answer<K extends QueueCommand>(queue: string, command: K, arg: ArgOf<K>, o?: SendOptions): Promise<Answer<K>> {
    const reply = await this.send(queue, command, arg, o);
    if (isRefusal(reply)) throw new Refused(reply);
    // The compiler cannot subtract the refusal from a generic command's reply; the check above did.
    return reply as Answer<K>;
  }

  /** Ask once, without waiting for a restart: the reply, or undefined when no queue process of that name answered (or it answered nonsense). */
  async probe<K extends QueueCommand>(queue: string, command: K, arg: ArgOf<K>, timeoutMs: number): Promise<ReplyOf<K> | undefined> {
    try {
      return await this.send(queue, command, arg, { timeoutMs, waitMs: 0 });
    } catch (e) {
      if (e instanceof RqError && (e.code === 'RQ_UNAVAILABLE' || e.code === 'RQ_OUTCOME_UNKNOWN' || e.code === 'RQ_PROTOCOL' || e.code === 'RQ_QUEUE_NOT_FOUND')) return undefined;
      throw e;
    }
  }

  // ───────────────────────────── RQ's commands ─────────────────────────────

  async ping(queue: string, o?: QueueCallOptions): Promise<'pong'> {
    return (await this.answer(queue, 'ping', {}, o))[0];
  }

  async uptime(queue: string, o?: QueueCallOptions): Promise<number> {
    return (await this.answer(queue, 'uptime', {}, o))[0];
  }

  async status(queue: string, o?: QueueCallOptions): Promise<QueueStatusText> {
    return (await this.answer(queue, 'status', {}, o))[0];
  }

  async config(queue: string, o?: QueueCallOptions): Promise<ConfigView> {
    return (await this.answer(queue, 'config', {}, o))[1];
  }

  numMessages(queue: string, o?: QueueCallOptions): Promise<Counts> {
    return this.answer(queue, 'num_messages', {}, o);
  }

  messages(queue: string, arg: MessagesArg, o?: QueueCallOptions): Promise<ListedMessage[]> {
    return this.answer(queue, 'messages', arg, o);
  }

  async search(queue: string, arg: SearchArg, o?: QueueCallOptions): Promise<SearchResult> {
    return (await this.answer(queue, 'search', arg, o))[1];
  }

  stats(queue: string, o?: QueueCallOptions): Promise<QueueStatus> {
    return this.answer(queue, 'stats', {}, o);
  }

  async clean(queue: string, arg: CleanOverride, o?: QueueCallOptions): Promise<CleanReport> {
    return (await this.answer(queue, 'clean', arg, o))[1];
  }

  /** The new message's full id. */
  async createMessage(queue: string, input: MessageInput, o?: QueueCallOptions): Promise<string> {
    return (await this.answer(queue, 'create_message', input, o))[1];
  }

  async prepMessage(queue: string, input: MessageInput, o?: QueueCallOptions): Promise<string> {
    return (await this.answer(queue, 'prep_message', input, o))[1];
  }

  async singleQue(queue: string, input: MessageInput, o?: QueueCallOptions): Promise<string> {
    return (await this.answer(queue, 'single_que', input, o))[1];
  }

  async commitMessage(queue: string, msgId: string, o?: QueueCallOptions): Promise<string> {
    return (await this.answer(queue, 'commit_message', { msg_id: msgId }, o))[1];
  }

  async attachMessage(queue: string, arg: AttachArg, o?: QueueCallOptions): Promise<string> {
    return (await this.answer(queue, 'attach_message', arg, o))[1];
  }

  async deleteAttachMessage(queue: string, msgId: string, attachmentName: string, o?: QueueCallOptions): Promise<string> {
    return (await this.answer(queue, 'delete_attach_message', { msg_id: msgId, attachment_name: attachmentName }, o))[1];
  }

  async getMessage(queue: string, msgId: string, o?: QueueCallOptions): Promise<MessageView> {
    return (await this.answer(queue, 'get_message', { msg_id: msgId }, o))[1];
  }

  async getMessageState(queue: string, msgId: string, o?: QueueCallOptions): Promise<State> {
    return (await this.answer(queue, 'get_message_state', { msg_id: msgId }, o))[1];
  }

  async getMessageStatus(queue: string, msgId: string, o?: QueueCallOptions): Promise<MessageStatus> {
    return (await this.answer(queue, 'get_message_status', { msg_id: msgId }, o))[1];
  }

  async deleteMessage(queue: string, msgId: string, o?: QueueCallOptions): Promise<string> {
    return (await this.answer(queue, 'delete_message', { msg_id: msgId }, o))[1];
  }

  async destroyMessage(queue: string, msgId: string, o?: QueueCallOptions): Promise<string> {
    return (await this.answer(queue, 'destroy_message', { msg_id: msgId }, o))[1];
  }

  async runMessage(queue: string, msgId: string, o?: QueueCallOptions): Promise<string> {
    return (await this.answer(queue, 'run_message', { msg_id: msgId }, o))[1];
  }

  /** The clone's full id. */
  async cloneMessage(queue: string, msgId: string, o?: QueueCallOptions): Promise<string> {
    return (await this.answer(queue, 'clone_message', { msg_id: msgId }, o))[1];
  }

  // ───────────────────────────── the pull commands ─────────────────────────────

  async publish(queue: string, arg: PublishArg, o?: QueueCallOptions): Promise<{ id: string; ext_id: string | null }> {
    // A publish that announced its id before the queue process stopped made that message, or none.
    const created = (id: string): unknown => ['ok', { id, ext_id: arg.ext_id ?? null }];
    return (await this.answer(queue, 'publish', arg, { ...o, created }))[1];
  }

  async lease(queue: string, arg: LeaseArg, o?: QueueCallOptions): Promise<PulledView[]> {
    return (await this.answer(queue, 'lease', arg, o))[1];
  }

  /** How many waits it ended. */
  async cancelWait(queue: string, waiter: string, o?: QueueCallOptions): Promise<number> {
    return (await this.answer(queue, 'cancel_wait', { waiter }, o))[1];
  }

  async ack(queue: string, arg: ArgOf<'ack'>, o?: QueueCallOptions): Promise<{ id: string }> {
    return (await this.answer(queue, 'ack', arg, o))[1];
  }

  async nack(queue: string, arg: ArgOf<'nack'>, o?: QueueCallOptions): Promise<{ id: string; state: State }> {
    return (await this.answer(queue, 'nack', arg, o))[1];
  }

  async touch(queue: string, arg: ArgOf<'touch'>, o?: QueueCallOptions): Promise<{ until: number }> {
    return (await this.answer(queue, 'touch', arg, o))[1];
  }

  async set(queue: string, arg: ArgOf<'set'>, o?: QueueCallOptions): Promise<{ id: string; created: boolean }> {
    return (await this.answer(queue, 'set', arg, o))[1];
  }

  async peek(queue: string, arg: ArgOf<'peek'>, o?: QueueCallOptions): Promise<PulledView | null> {
    return (await this.answer(queue, 'peek', arg, o))[1];
  }

  async pullStats(queue: string, o?: QueueCallOptions): Promise<PullStats> {
    return (await this.answer(queue, 'pull_stats', {}, o))[1];
  }

  /** How many ready messages it removed. */
  async purgeReady(queue: string, o?: QueueCallOptions): Promise<number> {
    return (await this.answer(queue, 'purge_ready', {}, o))[1];
  }

  /** How many dead letters it moved. */
  async respawn(queue: string, arg: ArgOf<'respawn'>, o?: QueueCallOptions): Promise<number> {
    return (await this.answer(queue, 'respawn', arg, o))[1];
  }

  async deadLetter(queue: string, arg: ArgOf<'dead_letter'>, o?: QueueCallOptions): Promise<DeadLetter> {
    return (await this.answer(queue, 'dead_letter', arg, o))[1];
  }

  async finish(queue: string, arg: ArgOf<'finish'>, o?: QueueCallOptions): Promise<{ id: string; state: State }> {
    return (await this.answer(queue, 'finish', arg, o))[1];
  }

  async resultWait(queue: string, arg: ArgOf<'result_wait'>, o?: QueueCallOptions): Promise<PullResult | null> {
    return (await this.answer(queue, 'result_wait', arg, o))[1];
  }

  async remove(queue: string, ref: string, o?: QueueCallOptions): Promise<{ id: string }> {
    return (await this.answer(queue, 'remove', { ref }, o))[1];
  }

  async list(queue: string, arg: ArgOf<'list'>, o?: QueueCallOptions): Promise<PulledView[]> {
    return (await this.answer(queue, 'list', arg, o))[1];
  }
}
