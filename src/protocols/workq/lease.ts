/**
 * `lease`: the first job ready in any of the names, waiting up to the
 * timeout; names made meanwhile join the wait. No queue has precedence.
 *
 *   lease <name>... <wait-timeout>\r\n
 *
 * Replies `+OK 1\r\n<id> <name> <ttr> <payload-size>\r\n<payload>\r\n`, or `-TIMEOUT`. A
 * name that is no queue yet is kept in `config/workq.names`, so `inspect` shows it. A
 * client that sends its last byte ends its wait (so no job is leased for nobody), but a
 * poll (timeout 0) still takes a job: the client may still read the reply.
 */
import fs from 'node:fs';
import { abortableSleep } from '../../lib/abortable-sleep.js';
import type { PulledJob } from '../pull-client.js';
import type { WorkqDoor } from './door.js';
import { TIMEOUT, leaseReply } from './replies.js';
import type { WorkqRequest } from './requests.js';

/** The TTR of a lease of a message that has none (one another front door made). */
const DEFAULT_TTR_MS = 60_000;

export async function lease(door: WorkqDoor, { names, waitMs }: Extract<WorkqRequest, { cmd: 'lease' }>, clientGone: AbortSignal): Promise<Buffer> {
  const { client } = door;
  // A poll takes a job even from a client that has sent its last byte (it may still read the reply).
  const gone = waitMs > 0 ? clientGone : new AbortController().signal;
  const fresh = names.filter((n) => !door.known(n));
  if (fresh.length > 0) {
    for (const n of fresh) door.leaseNames.add(n);
    fs.appendFileSync(door.namesFile, fresh.map((n) => `${n}\n`).join(''));
  }
  const deadline = Date.now() + waitMs;
  for (;;) {
    // No queue has precedence: the order of the names is shuffled.
    const missing = new Set(names.filter((n) => !client.exists(n)));
    const existing = shuffle(names.filter((n) => !missing.has(n)));
    const turn = new AbortController();
    const onGone = (): void => turn.abort();
    const onMade = (name: string): void => {
      if (missing.has(name)) turn.abort();
    };
    if (gone.aborted) turn.abort();
    else gone.addEventListener('abort', onGone);
    door.made.on('queue', onMade);
    let jobs: PulledJob[] = [];
    try {
      const left = Math.max(0, deadline - Date.now());
      if (existing.length > 0) jobs = await client.lease(existing, { owner: 'workq', ttr_ms: undefined, default_ttr_ms: DEFAULT_TTR_MS, count: 1, wait_ms: left, signal: turn.signal });
      else await abortableSleep(left, turn.signal);
    } finally {
      gone.removeEventListener('abort', onGone);
      door.made.off('queue', onMade);
    }
    const job = jobs[0];
    if (job) return leaseReply(job.ext_id ?? job.id, job.queue, job.ttr_ms ?? 0, Buffer.from(job.payload ?? '', 'base64'));
    if (gone.aborted || !turn.signal.aborted || Date.now() >= deadline) return TIMEOUT;
  }
}

function shuffle<T>(items: T[]): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [items[i], items[j]] = [items[j]!, items[i]!];
  }
  return items;
}
