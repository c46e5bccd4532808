/**
 * Pid files: is the process a pid file names alive, and is it the program we expect?
 * The command-line check keeps a pid reused by another program from being mistaken
 * for rq-mgr or a queue process. Used by the web (503 while rq-mgr is down; the pid
 * column of the dashboard), and by `bin/rq-mgr` for the pid of an rq-mgr
 * that holds its lock (process-lock.ts) but does not answer it.
 */
import fs from 'node:fs';
import type { RootLayout } from '../store/layout.js';

/**
 * The pid in `file` if that process is alive and its command line contains `command`.
 * `/proc/<pid>/cmdline` is the whole test: it is missing for a dead pid and empty for a
 * zombie, and readable for another user's process (where kill(pid, 0) says EPERM).
 */
export function livePid(file: string, command: string): number | undefined {
  let pid: number;
  try {
    pid = Number.parseInt(fs.readFileSync(file, 'utf8'), 10);
  } catch {
    return undefined;
  }
  if (!Number.isInteger(pid) || pid <= 0) return undefined;
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(command) ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** The pid in config/queuemgr.pid if that process is alive and is rq-mgr. */
export function runningPid(root: RootLayout): number | undefined {
  return livePid(root.mgrPidFile, 'rq-mgr');
}
