/**
 * Test support for the cleaner: finished messages written straight into a queue's
 * hashed `done/` as a finished run leaves them (the queue counts them when it starts),
 * so a test can have thousands of old messages in a moment, and the path of one.
 */
import fs from 'node:fs';
import path from 'node:path';
import { idTimestamp } from '../../src/domain/ids.js';

/** A message directory of a hashed state (`done`, `relayed`) of the queue in `queueDir`. */
export function hashedDir(queueDir: string, state: string, id: string): string {
  const m = /^(\d{8})\.(\d\d)(\d\d)/.exec(id)!;
  return path.join(queueDir, state, m[1]!, m[2]!, m[3]!, id);
}

/**
 * Write `n` done messages into the queue in `queueDir`, ids one second apart from
 * `daysAgo` days back, oldest first; each with a `job/` of `files` small files. Returns
 * their ids. The queue must not be running yet.
 */
export function finishedLongAgo(queueDir: string, n: number, daysAgo: number, files = 0): string[] {
  const queue = path.basename(queueDir);
  const startMs = Date.now() - daysAgo * 86_400_000;
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const id = `${idTimestamp(new Date(startMs + i * 1000))}.${1000 + i}`;
    const dir = hashedDir(queueDir, 'done', id);
    fs.mkdirSync(path.join(dir, 'job'), { recursive: true });
    fs.writeFileSync(path.join(dir, 'msg'), JSON.stringify({ msg_id: id, dest: queue, count: 0, max_count: 15, due: 0 }));
    for (let f = 0; f < files; f++) fs.writeFileSync(path.join(dir, 'job', `out${f}.txt`), 'x');
    ids.push(id);
  }
  return ids;
}
