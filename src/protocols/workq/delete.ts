/**
 * `delete`: remove a job, in any state.
 *
 *   delete <id>\r\n
 *
 * Replies `+OK`, `-NOT-FOUND` when there is no such job. Under `strictUuidV4`, an id that
 * parses but is not version 4 is `+OK` and deletes nothing (the decoder marks it).
 */
import type { WorkqDoor } from './door.js';
import { OK } from './replies.js';
import type { WorkqRequest } from './requests.js';

export async function deleteJob(door: WorkqDoor, req: Extract<WorkqRequest, { cmd: 'delete' }>): Promise<Buffer> {
  if (req.ignore) return OK;
  const target = door.find(req.id);
  await door.client.remove(target.queue, target.id);
  return OK;
}
