/**
 * The worker of the built-in `cleaner` queue (docs/cleaner.md), run by
 * `libexec/cleaner_script` once per message, typically from a `schedule` entry of the
 * cleaner queue. `RQ_PARAM1` names the queue to clean, or `ALLQUEUES` for every queue of
 * the install; the first digit of `RQ_PARAM2`, when there is one, is the number of days
 * done and relayed messages are kept this time (RQ's retention override).
 *
 * The worker deletes nothing itself: each queue process owns its directories and counts,
 * so the worker asks each queue for its `clean` command (queue/housekeeping.ts), which
 * applies the queue's own limits (config.json `cleaner`), and asks again while a long
 * clean is still running. It logs what each queue removed. A queue that is admin DOWN
 * refuses and is skipped (DOWN means hands off), and so is one that goes DOWN during its
 * clean (the clean stops there); a queue that does not answer makes the run end in
 * `err`, naming it, once the others are cleaned.
 *
 * RQ's texts: a queue that does not exist is `fail the specified queue [<q>] does not
 * exist` and exit 1 (an improper exit, so `err`); success is `done successfully ran this
 * script`. RQ's cleaner also rotated each queue's `queue.log`; rq has no such files (its
 * processes log with pino to the install's log), so there is nothing to rotate.
 */
import fs from 'node:fs';
import { QueueClient } from '../client/queue-client.js';
import { asRq, isRefusal, refusalCode } from '../client/refusal.js';
import { isValidQueueName } from '../domain/names.js';
import { CLEANED_STATES, type CleanOverride } from '../domain/retention.js';
import type { CleanReport } from '../rpc/queue-api.js';
import { formatBytes } from '../lib/bytes.js';
import { installRoot } from '../lib/install-root.js';
import { queueDirNames, queueLayout, rootLayout } from '../store/layout.js';
import { log, report, rqEnv, say } from './worker-io.js';

/** How long one `clean` call may take; the queue replies within 20 s, finished or not. */
const CALL_TIMEOUT_MS = 60_000;
/** RQ_PARAM1 meaning every queue. */
const ALL_QUEUES = 'ALLQUEUES';

type Outcome = { type: 'cleaned'; report: CleanReport } | { type: 'skipped'; reason: string } | { type: 'failed'; reason: string };

/** Ask a queue to clean, and again while its clean runs. */
async function cleanQueue(queues: QueueClient, name: string, arg: CleanOverride): Promise<Outcome> {
  for (;;) {
    const reply = await queues.probe(name, 'clean', arg, CALL_TIMEOUT_MS);
    if (reply === undefined) return { type: 'failed', reason: 'not answering' };
    if (isRefusal(reply) && refusalCode(reply) === 'RQ_QUEUE_DOWN') return { type: 'skipped', reason: 'status: DOWN' };
    if (isRefusal(reply)) return { type: 'failed', reason: JSON.stringify(asRq(reply)) };
    const cleaned = reply[1];
    if (cleaned.error !== undefined) return { type: 'failed', reason: cleaned.error };
    if (cleaned.stopped !== undefined) return { type: 'skipped', reason: `${cleaned.stopped} after it removed ${summary(cleaned)}` };
    if (cleaned.finished) return { type: 'cleaned', report: cleaned };
    log(`${name}: still cleaning (${summary(cleaned)} so far)`);
  }
}

/** `done 12 (48.0 KiB), relayed 0, err 3 (12.0 KiB)` */
function summary(r: CleanReport): string {
  return CLEANED_STATES.map((s) => {
    const { messages, bytes } = r.removed[s];
    return messages === 0 ? `${s} 0` : `${s} ${messages} (${formatBytes(bytes)})`;
  }).join(', ');
}

export async function main(): Promise<number> {
  const root = rootLayout(installRoot());
  const target = rqEnv('PARAM1');
  const days = /\d/.exec(rqEnv('PARAM2'))?.[0];
  let names: string[];
  if (target === ALL_QUEUES) names = queueDirNames(root);
  else if (isValidQueueName(target) && fs.existsSync(queueLayout(root, target).dir)) names = [target];
  else {
    say(`fail the specified queue [${target}] does not exist`);
    return 1;
  }
  const arg = days === undefined ? {} : { max_age_days: Number(days) };
  const queues = new QueueClient(root);
  if (days !== undefined) log(`done and relayed kept ${days} days this time (RQ_PARAM2)`);
  const failed: string[] = [];
  for (const name of names) {
    report(`run cleaning ${name}`);
    const outcome = await cleanQueue(queues, name, arg);
    if (outcome.type === 'cleaned') log(`${name}: removed ${summary(outcome.report)}`);
    else if (outcome.type === 'skipped') log(`${name}: skipped, ${outcome.reason}`);
    else {
      log(`${name}: could not clean, ${outcome.reason}`);
      failed.push(`${name} (${outcome.reason})`);
    }
  }
  if (failed.length > 0) {
    say(`err could not clean ${failed.join(', ')}`);
    return 0;
  }
  say('done successfully ran this script');
  return 0;
}
