/**
 * `destroy_message`: TERM a running message's worker, its whole process group (RQ
 * signalled only the pid); one still starting is TERMed as soon as it has a pid. The
 * worker's exit then finishes the run as any other (dispatch.ts). Precondition: the
 * message runs a live worker, under its lock. On disk: nothing here. Errors:
 * RQ_BAD_REQUEST `lacking 'msg_id' field`, RQ_NOT_FOUND `msg not found` (no such run, or
 * its worker has exited). Reply: `["ok", "msg destroyed"]`.
 */
import { RqError } from '../../domain/errors.js';
import { isSafeId } from '../../domain/ids.js';
import { killGroup } from '../../spawn/runner.js';
import { msgIdArg } from '../args.js';
import { command } from '../command.js';
import type { QueueState } from '../state.js';

function termWorker(s: QueueState, id: string): void {
  const run = s.run.get(id);
  // Its worker has exited: the pid file may name a process that is not ours any more.
  if (run?.finishing) throw new RqError('RQ_NOT_FOUND', 'msg not found');
  if (run?.starting) {
    run.destroyOnStart = true;
    s.log.info({ msg_id: id }, 'message destroyed as its worker starts');
    return;
  }
  const pid = s.store.readPid(id)?.pid;
  if (pid === undefined) throw new RqError('RQ_NOT_FOUND', 'msg not found');
  killGroup(pid, 'SIGTERM');
  s.log.info({ msg_id: id, worker_pid: pid }, 'message destroyed');
}

export const destroyMessage = command({
  arg: msgIdArg,
  run: async (s, { msg_id }): Promise<['ok', 'msg destroyed']> => {
    if (!isSafeId(msg_id)) throw new RqError('RQ_NOT_FOUND', 'msg not found');
    await s.locks.exclusive(msg_id, async () => termWorker(s, msg_id));
    return ['ok', 'msg destroyed'];
  },
});
