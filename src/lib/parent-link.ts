/**
 * A child process that must not outlive its parent: the queue and web processes under
 * rq-mgr, and a queue process's spawners. The parent starts the child with an IPC
 * channel and its own pid in `RQ_PARENT_PID`; the channel closes when the parent dies,
 * even by kill -9. An ES module's imports load asynchronously, so a channel that closed
 * while the child was still loading has closed before anyone listened: the child must
 * also check, once it listens, that the channel is still open and that its parent is
 * still the process that started it. A process started by hand (no `RQ_PARENT_PID`) has
 * no parent to follow.
 */

/** The variable in which a parent passes its pid to a child it starts with an IPC channel. */
export const PARENT_PID_VAR = 'RQ_PARENT_PID';

/**
 * Call `onGone` when the parent that started this process goes away. Returns false when
 * it is gone already (the caller exits at once, having done nothing); `onGone` is then
 * not called. The variable is taken out of the environment, so the scripts and helpers
 * this process starts do not inherit it.
 */
export function followParent(onGone: () => void): boolean {
  const parent = Number(process.env[PARENT_PID_VAR]);
  delete process.env[PARENT_PID_VAR];
  if (!Number.isInteger(parent) || parent <= 0) return true;
  if (!process.connected || process.ppid !== parent) return false;
  process.once('disconnect', onGone);
  return true;
}
