/**
 * `add` and `schedule`: make a job, ready now or at its time.
 * `schedule` is `add` with a time; they share this handler.
 *
 *   add <id> <name> <ttr> <ttl> <payload-size> [-max-attempts=<n>] [-max-fails=<n>] [-priority=<n>]\r\n<payload>\r\n
 *   schedule <id> <name> <ttr> <ttl> <time> <payload-size> [flags as add]\r\n<payload>\r\n
 *
 * The job's TTL counts from now (add) or from its time (schedule); an expiry past year
 * 9999 is none. Replies `+OK`; `-CLIENT-ERROR Duplicate job` when a job of this id
 * exists (the error table's).
 */
import type { WorkqRequest } from './requests.js';
import { ATTEMPT_CAP, UNSCHEDULED_RANK, type WorkqDoor } from './door.js';
import { OK } from './replies.js';

/** Expiry instants past year 9999 are "never" (a TTL may be up to 2^64 - 1 ms). */
const LAST_INSTANT = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

export async function add(door: WorkqDoor, req: Extract<WorkqRequest, { cmd: 'add' | 'schedule' }>): Promise<Buffer> {
  const now = Date.now();
  const scheduled = req.cmd === 'schedule';
  const from = scheduled ? req.timeMs : now;
  const expiresAt = expiry(from, req.ttl);
  await door.publish(req.name, req.id, {
    payload: req.payload,
    priority: req.priority,
    rank: scheduled ? req.timeMs : UNSCHEDULED_RANK,
    ttr_ms: req.ttrMs,
    max_count: req.maxAttempts === 0 ? ATTEMPT_CAP : req.maxAttempts,
    max_attempts: req.maxAttempts,
    max_fails: req.maxFails,
    ttl: req.ttl.toString(),
    ...(expiresAt !== undefined ? { expires_at: expiresAt } : {}),
    ...(scheduled ? { due_at: req.timeMs, scheduled_at: req.timeMs } : {}),
  });
  return OK;
}

function expiry(from: number, ttl: bigint): number | undefined {
  const at = from + Number(ttl);
  return at > LAST_INSTANT ? undefined : at;
}
