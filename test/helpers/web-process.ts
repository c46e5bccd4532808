/**
 * The web process as the kernel sees it, for tests that check it leaks nothing: its pid
 * (the child of rq-mgr titled `[rq-web]`) and how many fds it holds.
 */
import fs from 'node:fs';
import type { TestRoot } from './install.js';

/** The web process: the child of rq-mgr (config/queuemgr.pid) whose title is `[rq-web]`. */
export function webPid(t: TestRoot): number {
  const mgr = t.pidIn('config/queuemgr.pid');
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === mgr && fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').startsWith('[rq-web]')) return Number(entry);
    } catch {
      // a process that exited while we looked
    }
  }
  throw new Error('no web process found');
}

/** The number of open fds of process `pid`. */
export function fdCount(pid: number): number {
  return fs.readdirSync(`/proc/${pid}/fd`).length;
}
