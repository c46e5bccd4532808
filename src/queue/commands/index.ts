/**
 * The queue process's command table (docs/socket.md), built from the command files
 * beside this one, each named by its wire name. RQ's commands first, then those beyond
 * RQ: `search`, `stats`, `history`, `bulk` and `adopt` for the web, `clean` (housekeeping.ts), and the pull model's
 * commands for external workers and the protocol front doors. `shutdown` is the queue
 * process's own (queue-main.ts).
 */
import type { QueueCommand, ReplyOf } from '../../rpc/queue-api.js';
import type { RpcConnection } from '../../rpc/server.js';
import type { QueueState } from '../state.js';
import { ack } from './ack.js';
import { adopt } from './adopt.js';
import { attachMessage } from './attach-message.js';
import { bulk } from './bulk.js';
import { cancelWait } from './cancel-wait.js';
import { clean } from './clean.js';
import { cloneMessage } from './clone-message.js';
import { commitMessage } from './commit-message.js';
import { config } from './config.js';
import { createMessage } from './create-message.js';
import { deadLetter } from './dead-letter.js';
import { deleteAttachMessage } from './delete-attach-message.js';
import { deleteMessage } from './delete-message.js';
import { destroyMessage } from './destroy-message.js';
import { finish } from './finish.js';
import { getMessageState } from './get-message-state.js';
import { getMessageStatus } from './get-message-status.js';
import { getMessage } from './get-message.js';
import { lease } from './lease.js';
import { list } from './list.js';
import { messages } from './messages.js';
import { nack } from './nack.js';
import { numMessages } from './num-messages.js';
import { peek } from './peek.js';
import { ping } from './ping.js';
import { prepMessage } from './prep-message.js';
import { publish } from './publish.js';
import { pullStats } from './pull-stats.js';
import { purgeReady } from './purge-ready.js';
import { remove } from './remove.js';
import { respawn } from './respawn.js';
import { resultWait } from './result-wait.js';
import { rows } from './rows.js';
import { runMessage } from './run-message.js';
import { search } from './search.js';
import { set } from './set.js';
import { singleQue } from './single-que.js';
import { history } from './history.js';
import { hostStats } from './host-stats.js';
import { stats } from './stats.js';
import { status } from './status.js';
import { touch } from './touch.js';
import { uptime } from './uptime.js';

/**
 * Each command's handler answers what the client's map (rpc/queue-api.ts) says it does:
 * the compiler checks both ends against the one map, and that the table serves exactly
 * its commands.
 */
type Serves = {
  [K in QueueCommand]: { run(s: QueueState, arg: never, conn: RpcConnection | undefined): ReplyOf<K> | Promise<ReplyOf<K>> };
};

export const COMMANDS = {
  ping,
  uptime,
  status,
  config,
  num_messages: numMessages,
  messages,
  search,
  rows,
  stats,
  host_stats: hostStats,
  history,
  clean,
  create_message: createMessage,
  prep_message: prepMessage,
  single_que: singleQue,
  commit_message: commitMessage,
  attach_message: attachMessage,
  delete_attach_message: deleteAttachMessage,
  get_message: getMessage,
  get_message_state: getMessageState,
  get_message_status: getMessageStatus,
  delete_message: deleteMessage,
  destroy_message: destroyMessage,
  run_message: runMessage,
  clone_message: cloneMessage,
  publish,
  lease,
  cancel_wait: cancelWait,
  ack,
  nack,
  touch,
  set,
  peek,
  pull_stats: pullStats,
  purge_ready: purgeReady,
  respawn,
  dead_letter: deadLetter,
  finish,
  result_wait: resultWait,
  remove,
  list,
  bulk,
  adopt,
} satisfies Serves;
