/**
 * Is rq-mgr running? `config/queuemgr.pid` must name a live process whose command line
 * is rq-mgr's, so a pid reused by another program is not mistaken for it. Used by
 * `bin/rq-mgr` (stale pid files) and the web (503 while rq-mgr is down, spec/rq.md §7.1).
 */
import fs from 'node:fs';
import path from 'node:path';
import type { RootLayout } from '../store/layout.js';

/** The pid in config/queuemgr.pid if that process is alive and is rq-mgr. */
export function runningPid(root: RootLayout): number | undefined {
  let pid: number;
  try {
    pid = Number.parseInt(fs.readFileSync(path.join(root.configDir, 'queuemgr.pid'), 'utf8'), 10);
  } catch {
    return undefined;
  }
  if (!Number.isInteger(pid) || pid <= 0) return undefined;
  try {
    process.kill(pid, 0);
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('rq-mgr') ? pid : undefined;
  } catch {
    return undefined;
  }
}
