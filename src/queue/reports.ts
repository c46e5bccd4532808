/**
 * A running script's reports on its status pipe (docs/scripts.md, "The pipe protocol"): each line is the run's
 * status (written to its `status` file at most every STATUS_WRITE_MS; the last line is
 * always written, durably, with the move out of `run`), a `resend` changes the message's
 * due time and count, the first completion decides the outcome, and a `dup` copies the
 * message into another queue and is answered on the pipe.
 */
import fs from 'node:fs';
import path from 'node:path';
import { isOk } from '../client/rpc.js';
import { coerceError, isNoSpace } from '../domain/errors.js';
import { PARAM_KEYS, type MessageInput } from '../domain/message.js';
import { isValidQueueName } from '../domain/names.js';
import { isCompletion, parseLine, type WorkerReport } from '../spawn/pipe-protocol.js';
import { noteNoSpace } from './finish-run.js';
import { nowSec, type QueueState, type RunEntry } from './state.js';

/** A running message's `status` file is rewritten at most this often. */
const STATUS_WRITE_MS = 50;

/** One line from a run's status pipe. */
export function onLine(s: QueueState, run: RunEntry, line: string): void {
  const report: WorkerReport = parseLine(line);
  run.jobStatus = report.text;
  run.hasStatus = true;
  run.statusTimer ??= setTimeout(() => writeRunStatus(s, run), STATUS_WRITE_MS);
  if (report.kind === 'resend') {
    run.msg.due = nowSec() + report.delaySec;
    run.msg.count = (run.msg.count ?? 0) + 1;
    try {
      s.store.writeMsg('run', run.id, run.msg);
    } catch (e) {
      s.log.warn({ msg_id: run.id, err: coerceError(e).message }, 'cannot save resend');
    }
  }
  if (isCompletion(report)) run.first ??= report;
  if (report.kind === 'dup') {
    void dup(s, run, report).then((reply) => run.worker?.reply(reply));
  }
}

function writeRunStatus(s: QueueState, run: RunEntry): void {
  run.statusTimer = undefined;
  if (run.finishing) return;
  try {
    s.store.writeStatus('run', run.id, run.jobStatus);
  } catch (e) {
    // The last line is written with the move out of run, once there is room.
    if (isNoSpace(e)) noteNoSpace(s, e);
    else s.log.warn({ msg_id: run.id, err: coerceError(e).message }, 'cannot write status');
  }
}

/**
 * A worker's `dup <delay>-<flag>-<destination>`: a copy of the running
 * message, with its attachments, in another queue (or `relay` for a URL). Answered
 * with `ok <full id>` or `fail <reason>`. Dup to this same queue is served in-process.
 */
async function dup(s: QueueState, run: RunEntry, r: Extract<WorkerReport, { kind: 'dup' }>): Promise<string> {
  const target = r.destination.startsWith('http') ? 'relay' : r.destination;
  if (!isValidQueueName(target) || !fs.existsSync(path.join(s.root.queuesDir, target))) {
    return `fail couldn't connect to queue - ${target}`;
  }
  const m = run.msg;
  const input: MessageInput = { dest: r.destination, orig_msg_id: m.orig_msg_id, count: 0, max_count: m.max_count ?? 15 };
  for (const k of ['src', ...PARAM_KEYS, 'post_run_webhook'] as const) if (k in m) input[k] = m[k];
  input['due'] = nowSec() + r.delaySec;
  const call = s.callQueue;
  try {
    const names = s.store.attachmentNames('run', run.id);
    if (names.length === 0) {
      const reply = await call(target, 'create_message', input);
      return isOk(reply) ? `ok ${reply[1]}` : `fail dup failed - ${reply[1]}`;
    }
    const prep = await call(target, 'prep_message', input);
    if (!isOk(prep)) return `fail dup failed - prep fail ${prep[1]}`;
    const dir = s.layout.msgDir('run', run.id);
    for (const name of names) {
      const att = await call(target, 'attach_message', { msg_id: prep[1], pathname: path.join(dir, 'attach', name), name });
      if (!isOk(att)) return `fail dup failed - attach fail ${att[1]}`;
    }
    const commit = await call(target, 'commit_message', { msg_id: prep[1] });
    if (!isOk(commit)) return `fail dup failed - commit fail ${commit[1]}`;
    return `ok ${prep[1]}`;
  } catch (e) {
    return `fail dup failed - ${coerceError(e).message}`;
  }
}
