/**
 * `result`: a job's result, waiting up to the timeout for it.
 *
 *   result <id> <wait-timeout>\r\n
 *
 * Replies `+OK 1\r\n<id> <1|0> <result-size>\r\n<result>\r\n`, `-TIMEOUT` when the job has
 * no result by then, `-NOT-FOUND` when there is no such job.
 */
import type { WorkqDoor } from './door.js';
import { TIMEOUT, resultReply } from './replies.js';
import type { WorkqRequest } from './requests.js';

export async function result(door: WorkqDoor, req: Extract<WorkqRequest, { cmd: 'result' }>, gone: AbortSignal): Promise<Buffer> {
  const now = Date.now();
  const target = door.find(req.id);
  const r = await door.client.resultWait(target.queue, target.id, now + req.waitMs, { signal: gone });
  return r ? resultReply(req.id, r.success, Buffer.from(r.result, 'base64')) : TIMEOUT;
}
