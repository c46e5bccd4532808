/**
 * Test support for a crash of a whole install: rq-mgr and every process under it (every
 * process whose chain of parents leads to rq-mgr: the queue processes, the web process,
 * spawners and workers, whatever process group each is in) killed with SIGKILL at the
 * same instant, as a power cut or the OOM killer of a cgroup would. The processes are
 * first stopped (SIGSTOP), so none of them sees another die and acts on it, then killed.
 */
import fs from 'node:fs';
import { parentPid, pidAlive, waitFor, type TestRoot } from './install.js';

/** `pid` and every process whose chain of parents leads to it, read from /proc. */
export function processTree(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const ppid = parentPid(Number(entry));
      children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
    } catch {
      // gone meanwhile
    }
  }
  const tree = [pid];
  for (let i = 0; i < tree.length; i++) tree.push(...(children.get(tree[i]!) ?? []));
  return tree;
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // gone meanwhile
  }
}

/**
 * Kill rq-mgr (config/queuemgr.pid) and every process under it with SIGKILL at once, and
 * wait until all of them are gone; returns their pids.
 */
export async function crashInstall(t: TestRoot): Promise<number[]> {
  const mgr = t.pidIn('config/queuemgr.pid');
  if (mgr === undefined || !pidAlive(mgr)) throw new Error('crashInstall: rq-mgr is not running');
  // Stop them all, parents first, until a scan finds none that is not stopped (a child
  // forked while its parent was being stopped is found by the next scan).
  const stopped = new Set<number>();
  for (;;) {
    const fresh = processTree(mgr).filter((pid) => !stopped.has(pid));
    if (fresh.length === 0) break;
    for (const pid of fresh) {
      signal(pid, 'SIGSTOP');
      stopped.add(pid);
    }
  }
  for (const pid of stopped) signal(pid, 'SIGKILL');
  await waitFor(() => [...stopped].every((pid) => !pidAlive(pid)), 10_000, 'every killed process to be gone');
  return [...stopped];
}
