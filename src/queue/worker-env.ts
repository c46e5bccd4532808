/**
 * The environment a queue's script starts with (docs/scripts.md, "Environment"): the queue process's own
 * (less RUBYOPT and UV_THREADPOOL_SIZE) plus the queue's `env_vars`, built once per config,
 * then the `RQ_*` variables of the message.
 */
import path from 'node:path';
import { hostUrl, parseFullId } from '../domain/ids.js';
import { PARAM_KEYS, fieldText, type Message } from '../domain/message.js';
import { RQ_VERSION } from '../domain/version.js';
import { fullIdOf, type QueueState } from './state.js';

/** Linux's limit on one `NAME=value` string of a new process's environment (MAX_ARG_STRLEN). */
const MAX_ENV_VAR_BYTES = 128 * 1024;

/** The environment every worker starts from, for the current config. */
function baseEnv(s: QueueState): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  delete env['RUBYOPT'];
  delete env['UV_THREADPOOL_SIZE'];
  for (const [k, v] of Object.entries(s.config.env_vars)) if (!k.startsWith('RQ_')) env[k] = v;
  return env;
}

/** The worker's environment for a message. */
export function workerEnv(s: QueueState, msg: Message, realScript: string): NodeJS.ProcessEnv {
  const { host, layout } = s;
  const env: NodeJS.ProcessEnv = { ...(s.dispatch.baseEnv ??= baseEnv(s)) };
  const dest = typeof msg.dest === 'string' ? msg.dest : JSON.stringify(msg.dest);
  const base = `http://${host.host}:${host.port}`;
  const destUrl = dest.startsWith('http:') ? dest : dest.startsWith('/q/') ? `${base}${dest}` : `${base}/q/${dest}`;
  const destQueue = dest.startsWith('http:') || dest.startsWith('/q/') ? (parseFullId(dest).queue ?? '') : dest;
  Object.assign(env, {
    RQ_VER: RQ_VERSION,
    RQ_SCRIPT: s.config.script,
    RQ_REALSCRIPT: realScript,
    RQ_HOST: hostUrl(host),
    RQ_DEST: destUrl,
    RQ_DEST_QUEUE: destQueue,
    RQ_MSG_ID: msg.msg_id,
    RQ_FULL_MSG_ID: fullIdOf(s, msg.msg_id),
    RQ_ORIG_MSG_ID: fieldText(msg.orig_msg_id),
    RQ_MSG_DIR: path.join(layout.publicPath('run', msg.msg_id), 'job'),
    RQ_WRITE: '3',
    RQ_READ: '4',
    RQ_PIPE: '3',
    RQ_COUNT: String(msg.count ?? 0),
  });
  // Linux refuses to exec with one variable of 128 KiB or more (E2BIG): such a param is
  // given as '' and the script reads it from `../msg` (docs/scripts.md, "Environment").
  for (const [i, key] of PARAM_KEYS.entries()) {
    const name = `RQ_PARAM${i + 1}`;
    const text = fieldText(msg[key]);
    env[name] = Buffer.byteLength(`${name}=${text}`) < MAX_ENV_VAR_BYTES ? text : '';
  }
  if (msg.force_remote !== undefined && msg.force_remote !== null && msg.force_remote !== false) env['RQ_FORCE_REMOTE'] = '1';
  else delete env['RQ_FORCE_REMOTE'];
  return env;
}
