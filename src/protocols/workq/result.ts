/**
 * `result`: a job's result, waiting up to the timeout for it.
 *
 *   result <id> <wait-timeout>\r\n
 *
 * Replies `+OK 1\r\n<id> <1|0> <result-size>\r\n<result>\r\n`, `-TIMEOUT` when the job has
 * no result by then, `-NOT-FOUND` when there is no such job. A client that has sent its
 * last byte waits no more, but still gets the result that is there (it may still read, and a
 * result takes nothing from the queue).
 */
import type { PullResult } from '../../rpc/queue-api.js';
import type { WorkqDoor } from './door.js';
import { TIMEOUT, resultReply } from './replies.js';
import type { WorkqRequest } from './requests.js';

export async function result(door: WorkqDoor, req: Extract<WorkqRequest, { cmd: 'result' }>, gone: AbortSignal): Promise<Buffer> {
  const target = door.find(req.id);
  const ask = (waitMs: number, signal?: AbortSignal): Promise<PullResult | null> =>
    door.client.resultWait(target.queue, target.id, Date.now() + waitMs, signal ? { signal } : {});
  let r = gone.aborted ? null : await ask(req.waitMs, gone);
  if (r === null && gone.aborted) r = await ask(0);
  return r ? resultReply(req.id, r.success, Buffer.from(r.result, 'base64')) : TIMEOUT;
}
