/**
 * `run`: make a job and wait for its result.
 *
 *   run <id> <name> <ttr> <wait-timeout> <payload-size> [-priority=<n>]\r\n<payload>\r\n
 *
 * Replies `+OK 1\r\n<id> <1|0> <result-size>\r\n<result>\r\n` when a worker completes or
 * fails the job within the wait, `-TIMEOUT` when none does. The job is ephemeral: it is
 * removed once `run` has answered, whatever the outcome; its TTL (waits plus TTR plus a
 * margin) removes it should this process die before that.
 */
import { RqError } from '../../domain/errors.js';
import { ATTEMPT_CAP, UNSCHEDULED_RANK, type WorkqDoor } from './door.js';
import { TIMEOUT, resultReply } from './replies.js';
import type { WorkqRequest } from './requests.js';

/** How long a `run` job outlives its waits, should its waiter die. */
const RUN_MARGIN_MS = 60_000;

export async function run(door: WorkqDoor, req: Extract<WorkqRequest, { cmd: 'run' }>, gone: AbortSignal): Promise<Buffer> {
  const now = Date.now();
  await door.publish(req.name, req.id, {
    payload: req.payload,
    priority: req.priority,
    rank: UNSCHEDULED_RANK,
    ttr_ms: req.ttrMs,
    max_count: ATTEMPT_CAP,
    ephemeral: true,
    expires_at: now + req.waitMs + req.ttrMs + RUN_MARGIN_MS,
  });
  try {
    const r = await door.client.resultWait(req.name, req.id, now + req.waitMs, { leaseGrace: true, signal: gone });
    return r ? resultReply(req.id, r.success, Buffer.from(r.result, 'base64')) : TIMEOUT;
  } finally {
    // Whatever the outcome, the job is gone once run has answered.
    await door.client.remove(req.name, req.id).catch((e: unknown) => {
      if (!(e instanceof RqError && e.code === 'RQ_NOT_FOUND')) door.log.warn({ id: req.id, err: (e as Error).message }, 'cannot remove a run job; its TTL will');
    });
  }
}
