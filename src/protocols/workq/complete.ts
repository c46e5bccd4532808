/**
 * `complete` and `fail`: a worker's result for a job it leased.
 * They differ only in the success flag; they share this handler.
 *
 *   complete <id> <result-size>\r\n<result>\r\n
 *   fail <id> <result-size>\r\n<result>\r\n
 *
 * Replies `+OK`; `-CLIENT-ERROR Duplicate result` when the job is not leased (it has its
 * result already), `-NOT-FOUND` when there is no such job.
 */
import { RqError } from '../../domain/errors.js';
import type { WorkqDoor } from './door.js';
import { OK, clientError } from './replies.js';
import type { WorkqRequest } from './requests.js';

export async function complete(door: WorkqDoor, req: Extract<WorkqRequest, { cmd: 'complete' | 'fail' }>): Promise<Buffer> {
  const target = door.find(req.id);
  try {
    await door.client.finish(target.queue, target.id, { success: req.cmd === 'complete', result: req.result, status: `${req.cmd === 'complete' ? 'completed' : 'failed'} via workq` });
  } catch (e) {
    if (e instanceof RqError && e.code === 'RQ_NOT_IN_STATE') return clientError('Duplicate result');
    throw e;
  }
  return OK;
}
