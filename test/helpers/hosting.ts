/**
 * Helpers of the hosting tests: a pull queue made by hand (no script: a host serves it),
 * and the files of a queue a process holds open (none once the queue is put away).
 */
import fs from 'node:fs';
import path from 'node:path';
import type { TestRoot } from './install.js';

/** A pull queue's directory and config (no script), as a front door or an operator makes it. */
export function addPullQueue(t: TestRoot, name: string): void {
  const dir = t.queueDir(name);
  fs.mkdirSync(dir);
  fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify({ name, script: '', num_workers: 0 }));
}

/** The files under queues/<queue>/ that process `pid` holds open. */
export function openFilesOf(t: TestRoot, pid: number, queue: string): string[] {
  const dir = `${t.queueDir(queue)}/`;
  const out: string[] = [];
  for (const fd of fs.readdirSync(`/proc/${pid}/fd`)) {
    try {
      const target = fs.readlinkSync(`/proc/${pid}/fd/${fd}`);
      if (target.startsWith(dir)) out.push(target);
    } catch {
      // closed meanwhile
    }
  }
  return out;
}
