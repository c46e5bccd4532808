/**
 * The queue process's RPC, as types: one map from every command's wire name to the
 * argument a client sends and the reply the queue process sends back (QueueApi), and the
 * shapes those replies carry (a message's read view, the `stats` reply, a pull message's
 * view, …). The server's command table and the typed client (client/queue-client.ts) are
 * both checked against this map, so a front door never casts a reply and never needs the
 * queue's or the store's modules for a type. Types only: nothing here runs.
 *
 * Every command may also answer a refusal (Fail): `["fail", text]` in RQ's shape, where a
 * third element carries the error's stable code (RQ's readers ignore it). The one other
 * refusal is `delete_attach_message`'s `[false, text]`, RQ's. A command the queue does not
 * know gets `[ "ERROR" ]` (RQ's bytes), which no client of this map sends.
 */
import type { BulkOp } from '../domain/bulk-ops.js';
import type { DiskUsage, StateUsage } from '../domain/disk-usage.js';
import type { ErrorCode } from '../domain/errors.js';
import type { HistoryRange, HistorySeries, HistoryTotals } from '../domain/history-layout.js';
import type { Lease, Message, MessageInput } from '../domain/message.js';
import type { QueueConfig, ScheduleEntry } from '../domain/queue-config.js';
import type { CleanOverride, CleanedState, CleanerConfig, RetentionLimits } from '../domain/retention.js';
import type { State } from '../domain/states.js';

/** A refusal: RQ's text and, beyond RQ, the error's stable code. */
export type Fail = ['fail', string, ErrorCode?];
/** `["ok", value]`: RQ's success. */
export type Ok<T> = ['ok', T];
/** A command with no argument (an empty one, or `{}`). */
export type NoArg = Record<string, never>;
/** The commands that name one message: its short id, or its full id (the message URL). */
export interface MsgIdArg {
  msg_id: string;
}

/** The flag files' status: DOWN wins over PAUSE. */
export type AdminStatus = 'UP' | 'PAUSE' | 'DOWN';
/** The status `status` answers: SCRIPTERROR when the script cannot run, else the admin status (UP, PAUSE or DOWN). */
export type QueueStatusText = AdminStatus | 'SCRIPTERROR';
/** How many messages each state holds. */
export type Counts = Record<State, number>;

/** The `config` reply: the queue's live config, its schedule's cron objects left opaque (RQ's). */
export type ConfigView = Pick<QueueConfig, 'name' | 'script' | 'num_workers' | 'exec_prefix' | 'env_vars' | 'coalesce_params' | 'blocking_params'> & {
  schedule: Array<{ cron: string; cron_obj: '<opaque>'; params: ScheduleEntry['params'] }>;
  timeout?: number;
};

/**
 * One row of a `messages` reply. Every state gives `msg_id`; que adds `due` and `dest`,
 * run its last status line and `dest`, relayed its `dest`, `status` "relayed" and the id
 * it was relayed as. A paged call (with `offset`) gives every row its status text.
 */
export interface ListedMessage {
  msg_id: string;
  status?: string;
  due?: unknown;
  dest?: unknown;
  new_msg?: string;
}

/** The `messages` argument: one state; with `offset` a page (at most `limit`), without it RQ's whole list. */
export interface MessagesArg {
  state: State;
  offset?: number;
  limit?: number;
}

/** The `rows` filter (the queue page's): substrings of a param, of src, of the id, a param, src or the status text (`text`), and created in [from, to) (epoch seconds). */
export interface RowFilter {
  param1?: string | undefined;
  param2?: string | undefined;
  param3?: string | undefined;
  param4?: string | undefined;
  src?: string | undefined;
  text?: string | undefined;
  from?: number | undefined;
  to?: number | undefined;
}

/** The `rows` order: a field, ascending, or descending with a leading `-`. */
export const ROW_SORTS = ['created', '-created', 'finished', '-finished', 'duration', '-duration'] as const;
export type RowSort = (typeof ROW_SORTS)[number];

/** The `rows` argument: one state, filtered, sorted (else in `messages` order), a page. */
/** The most rows one `rows` call answers. */
export const ROWS_MAX = 1000;

export interface RowsArg {
  state: State;
  filter?: RowFilter;
  sort?: RowSort;
  offset?: number;
  limit?: number;
}

/** One row of the queue page: times are epoch ms (null: not known, or not for this state); params and src shortened. */
export interface ListRow {
  msg_id: string;
  params: (string | null)[];
  src: string | null;
  created: number | null;
  started: number | null;
  finished: number | null;
  duration_ms: number | null;
  count: number | null;
  /** The worker's exit code as text, or its signal. */
  exit: string | null;
  status: string;
  due?: unknown;
  /** que, run and relayed: the message's `dest`. */
  dest?: unknown;
}

/** The `rows` reply: the state's count, how many match, and the page. */
export interface RowsReply {
  total: number;
  matching: number;
  rows: ListRow[];
}

/** A message's read view: the stored message, where it is, its status text and (get_message only) its attachments. */
export interface MessageView extends Message {
  path: string;
  state: State;
  status: string;
  _attachments?: Record<string, { md5: string; size: number; path: string }>;
}

/** The `search` argument: field → text pairs, a free text, the states to look in, a page. */
export interface SearchArg {
  query?: Record<string, string>;
  text?: string;
  /** The pairs match exactly, not as substrings. */
  exact?: boolean;
  states?: readonly State[];
  offset?: number;
  limit?: number;
}

export interface SearchResult {
  /** The matches' read views, without `_attachments`. */
  messages: MessageView[];
  /** Messages looked at. */
  scanned: number;
  /** The scan stopped at `limit`: more may match. */
  truncated: boolean;
}

/** A schedule entry as the `stats` reply shows it (epoch seconds, or null). */
export interface ScheduleStatus extends ScheduleEntry {
  next: number | null;
  last: number | null;
  error?: string;
}

export type { DiskUsage, StateUsage } from '../domain/disk-usage.js';

/** The counters of a queue process since it started. */
export interface StatsCounters {
  created: number;
  done: number;
  err: number;
  relayed: number;
  spawn_failures: number;
  /**
   * `buckets` maps each bound (`"0.1"` … `"600"`, `"+Inf"`) to the number of runs that
   * took at most that long (parse it as an object: integer-like keys come first in JSON).
   */
  run_seconds: { sum: number; count: number; buckets: Record<string, number> };
  done_last_minute: number;
  err_last_minute: number;
}

/** The `stats` reply: the dashboard's whole view of a queue in one answer. */
export interface QueueStatus extends StatsCounters {
  pid: number;
  /** The combined status: SCRIPTERROR, else the admin status. */
  status: QueueStatusText;
  /** The flag files alone. */
  admin: AdminStatus;
  uptime: number;
  counts: Counts;
  /** The schedule the queue runs (its live config). */
  schedule: ScheduleStatus[];
  /** How long done, relayed and err messages are kept. */
  cleaner: CleanerConfig;
  /** The last disk usage measured; null before the first. */
  disk: DiskUsage | null;
  /** done, err, and the wait and run times, since the queue's history began (across restarts: queue/history.ts). */
  totals: HistoryTotals;
}

/** The `clean` reply: what a clean removed so far, per state, under which limits. */
export interface CleanReport {
  finished: boolean;
  /** Epoch seconds. */
  started_at: number;
  limits: Record<CleanedState, RetentionLimits>;
  removed: Record<CleanedState, StateUsage>;
  /** Batches taken so far, over all states. */
  batches: number;
  /** The clean stopped before it was through because the queue went DOWN (the next clean goes on). */
  stopped?: 'status: DOWN';
  /** Why the clean stopped early (a filesystem error), when it did. */
  error?: string;
}

/** The `get_message_status` reply. */
export interface MessageStatus {
  path: string;
  status: string;
  state: State;
}

/** The `attach_message` argument: the file to link in (an absolute path) and its name. */
export interface AttachArg extends MsgIdArg {
  pathname: string;
  name?: string;
  local_fs_only?: string | true;
}

// ───────────────────────────── the pull model ─────────────────────────────

/** A message as the pull commands show it. */
export interface PulledView {
  queue: string;
  /** rq's short id (the directory name). */
  id: string;
  /** The external id (lmstfy job id, RQMS item id), or null. */
  ext_id: string | null;
  state: State;
  /** `attach/payload`, base64; null when the message has none (an RQ-native message). */
  payload: string | null;
  /** param1..param4, null when absent. */
  params: unknown[];
  src: unknown;
  /** When the message was created (from its id), epoch ms. */
  created_ms: number;
  /** When it is (or was) due, epoch ms. */
  due_ms: number;
  /** When it expires (TTL), epoch ms; null for never. */
  expires_at: number | null;
  /** Deliveries left (after this one, in a lease reply); null when not counted by tries. */
  tries: number | null;
  /** Leases so far (RQ's `count`). */
  count: number;
  /** Leases before a lease that ends sends it to err; 0 = no limit. */
  max_count: number;
  /** Raised by every publish, set and lease. */
  rev: number;
  priority: number;
  /** In err as a dead letter. */
  dead: boolean;
  /** The live lease: who, since when, until when (epoch ms; null = no expiry). */
  lease: Lease | null;
  /** A lease that names no TTR lasts this long (ms); null: none. */
  ttr_ms: number | null;
  /** Explicit failures so far, and the retries allowed (0: none). */
  fails: number;
  max_fails: number;
  /** A finished message's outcome; null before. */
  success: boolean | null;
  /** When a scheduled message was due (epoch ms); null when it was not scheduled. */
  scheduled_at: number | null;
  /** The TTL as given (ms, decimal); null when none was given. */
  ttl: string | null;
  /** Workq's max-attempts as given; null when not given. */
  max_attempts: number | null;
  /** Its attributes (name → value); null when it has none. */
  attributes: Record<string, string> | null;
}

/** A finished message's outcome, as `result_wait` answers it. */
export interface PullResult {
  state: 'done' | 'err';
  success: boolean;
  /** `attach/result`, base64 ('' when none). */
  result: string;
}

/** The `pull_stats` reply. */
export interface PullStats {
  /** In que and due. */
  ready: number;
  /** In que, not due yet. */
  delayed: number;
  /** In run with a lease. */
  leased: number;
  /** In err as dead letters. */
  dead: number;
  /** Removed by their TTL before they finished, since the queue process started. */
  evicted: number;
  /** When the queue process started (epoch ms). */
  started: number;
}

/** The `publish` argument (and `set`'s, with its `ext_id`); every field is optional. */
export interface PublishArg {
  /** The message's `src`: the front door's name (default `pull`). */
  src?: string;
  /** Stored as `attach/payload`: base64. */
  payload?: string;
  /** Stored as the message's param1..param4. */
  params?: Partial<Record<'param1' | 'param2' | 'param3' | 'param4', unknown>>;
  /** External id, unique in the queue while the message is not done: RQ_DUPLICATE when taken. */
  ext_id?: string;
  /** Ready this many ms from now (default 0). */
  delay_ms?: number;
  /** Removed this many ms from now unless acked or dead (default: never). */
  ttl_ms?: number;
  /** Deliveries allowed: each lease takes one; a TTR expiry with none left makes it dead. */
  tries?: number;
  /** Without `tries`: leases before a TTR expiry makes it dead; 0 = no limit (default 15, RQ's). */
  max_count?: number;
  /** Higher leases first (default 0). */
  priority?: number;
  /** Its place among ready messages of its priority, instead of its due time (epoch ms). */
  rank?: number;
  /** The tie-break after rank, instead of the id (compared as strings). */
  sort_key?: string;
  /** Where a TTR expiry puts it back: `tail` (due = now) or `place` (keeps its place; default). */
  requeue?: 'tail' | 'place';
  /** `server`: `ext_id` is unique across every queue and held until the message is removed (Workq). */
  ext_scope?: 'server';
  /** Due at this instant (epoch ms) instead of `delay_ms` from now. */
  due_at?: number;
  /** Removed at this instant (epoch ms) instead of `ttl_ms` from now. */
  expires_at?: number;
  /** The TTL holds once it is finished too (its result lives until then). */
  ttl_final?: boolean;
  /** The TTL as the client gave it (ms, decimal), shown back. */
  ttl?: string;
  /** Leases that name no TTR last this long (ms). */
  ttr_ms?: number;
  /** Failures (finish without success) retried before one is final; 0 = none (default). */
  max_fails?: number;
  /** When it was scheduled for (epoch ms), shown back. */
  scheduled_at?: number;
  /** Removed once its result is read; not counted as evicted by its TTL. */
  ephemeral?: boolean;
  /** Workq's max-attempts as given, shown back (`max_count` is the rule). */
  max_attempts?: number;
  /** Name → value pairs kept with the message and shown back (at most 32, names 1..64 bytes, values ≤ 1024 bytes); `{}` is none. */
  attributes?: Record<string, string>;
}

/** The `lease` argument. */
export interface LeaseArg {
  /** Who holds the lease (shown on the dashboard). */
  owner: string;
  /** The lease ends after this many ms (TTR); absent or null: each message's own `ttr_ms`, else `default_ttr_ms`, else never. */
  ttr_ms?: number | null | undefined;
  default_ttr_ms?: number | undefined;
  /** At most this many messages (1..1000; default 1). */
  count?: number;
  /** When none is ready: wait this long for one. */
  wait_ms?: number;
  /** The wait's name, for `cancel_wait`. */
  waiter?: string;
}

/** The commands that name a pull message: by external id or short id. */
export interface RefArg {
  ref: string;
}

/** The `dead_letter` reply: the dead letter's size and oldest message, and how many were deleted first. */
export interface DeadLetter {
  size: number;
  head: PulledView | null;
  deleted: number;
}

/** The `bulk` argument: one operation on messages of one state (domain/bulk-ops.ts), at most BULK_BATCH ids. */
export interface BulkArg {
  op: BulkOp;
  /** The state the messages were chosen in: one found elsewhere has moved on, and is skipped. */
  state: State;
  ids: string[];
  /** `move`: the queue that gets the new messages. */
  dest?: string;
}

/** What one `bulk` (or `adopt`) call did: ids done, skipped (moved on, or gone), and failed with their reason. */
export interface BulkResult {
  done: number;
  skipped: number;
  failed: Array<{ id: string; error: string }>;
}

/** The `adopt` argument: messages of another queue (`from`, all in `state`) to copy into this one, for a bulk move. */
export interface AdoptArg {
  from: string;
  state: State;
  ids: string[];
}

/** Every command: its argument (`arg`) and its reply (`reply`), refusals included. */
export interface QueueApi {
  ping: { arg: NoArg; reply: ['pong'] | Fail };
  uptime: { arg: NoArg; reply: [number] | Fail };
  status: { arg: NoArg; reply: [QueueStatusText] | Fail };
  config: { arg: NoArg; reply: Ok<ConfigView> | Fail };
  num_messages: { arg: NoArg; reply: Counts | Fail };
  messages: { arg: MessagesArg; reply: ListedMessage[] | Fail };
  search: { arg: SearchArg; reply: Ok<SearchResult> | Fail };
  rows: { arg: RowsArg; reply: Ok<RowsReply> | Fail };
  stats: { arg: NoArg; reply: QueueStatus | Fail };
  history: { arg: { range?: HistoryRange }; reply: HistorySeries | Fail };
  /** Beyond RQ: the `stats` of every queue the same process serves, by name. */
  host_stats: { arg: { queues?: string[] }; reply: Record<string, QueueStatus> | Fail };
  clean: { arg: CleanOverride; reply: Ok<CleanReport> | Fail };
  create_message: { arg: MessageInput; reply: Ok<string> | Fail };
  prep_message: { arg: MessageInput; reply: Ok<string> | Fail };
  single_que: { arg: MessageInput; reply: Ok<string> | Fail };
  commit_message: { arg: MsgIdArg; reply: Ok<'msg commited'> | Fail };
  attach_message: { arg: AttachArg; reply: Ok<`${string}-Attached successfully`> | Fail };
  delete_attach_message: { arg: MsgIdArg & { attachment_name: string }; reply: Ok<'Attachment deleted successfully'> | [false, string] | Fail };
  get_message: { arg: MsgIdArg; reply: Ok<MessageView> | Fail };
  get_message_state: { arg: MsgIdArg; reply: Ok<State> | Fail };
  get_message_status: { arg: MsgIdArg; reply: Ok<MessageStatus> | Fail };
  delete_message: { arg: MsgIdArg; reply: Ok<'msg deleted'> | Fail };
  destroy_message: { arg: MsgIdArg; reply: Ok<'msg destroyed'> | Fail };
  run_message: { arg: MsgIdArg; reply: Ok<'msg sent to front of run queue'> | Fail };
  clone_message: { arg: MsgIdArg; reply: Ok<string> | Fail };
  publish: { arg: PublishArg; reply: Ok<{ id: string; ext_id: string | null }> | Fail };
  lease: { arg: LeaseArg; reply: Ok<PulledView[]> | Fail };
  cancel_wait: { arg: { waiter: string }; reply: Ok<number> | Fail };
  ack: { arg: RefArg & { rev?: number; from?: State[]; status?: string }; reply: Ok<{ id: string }> | Fail };
  nack: { arg: RefArg & { refund?: boolean; delay_ms?: number }; reply: Ok<{ id: string; state: State }> | Fail };
  touch: { arg: RefArg & { ttr_ms: number; rev?: number }; reply: Ok<{ until: number }> | Fail };
  set: { arg: PublishArg & { ext_id: string }; reply: Ok<{ id: string; created: boolean }> | Fail };
  peek: { arg: Partial<RefArg> & { all?: boolean }; reply: Ok<PulledView | null> | Fail };
  pull_stats: { arg: NoArg; reply: Ok<PullStats> | Fail };
  purge_ready: { arg: NoArg; reply: Ok<number> | Fail };
  respawn: { arg: { limit?: number; ttl_ms?: number; ref?: string }; reply: Ok<number> | Fail };
  dead_letter: { arg: { delete?: number }; reply: Ok<DeadLetter> | Fail };
  finish: { arg: RefArg & { success: boolean; result?: string; status?: string }; reply: Ok<{ id: string; state: State }> | Fail };
  result_wait: { arg: RefArg & { wait_ms?: number; lease_grace?: boolean }; reply: Ok<PullResult | null> | Fail };
  remove: { arg: RefArg; reply: Ok<{ id: string }> | Fail };
  list: { arg: { which: 'ready' | 'delayed' | 'leased' | 'dead'; offset?: number; limit?: number }; reply: Ok<PulledView[]> | Fail };
  /** Beyond RQ: one operation on up to BULK_BATCH messages (the dashboard's bulk actions). */
  bulk: { arg: BulkArg; reply: Ok<BulkResult> | Fail };
  /** Beyond RQ: a bulk move's other half: copies of another queue's messages made here; `made` maps each source id to its copy's short id. */
  adopt: { arg: AdoptArg; reply: Ok<{ made: Record<string, string>; failed: BulkResult['failed'] }> | Fail };
}

export type QueueCommand = keyof QueueApi;
export type ArgOf<K extends QueueCommand> = QueueApi[K]['arg'];
export type ReplyOf<K extends QueueCommand> = QueueApi[K]['reply'];
/** A command's reply when it is not a refusal. */
export type Answer<K extends QueueCommand> = Exclude<ReplyOf<K>, Fail | [false, string]>;
