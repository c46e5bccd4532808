/**
 * `inspect`: the server, the queues, one queue, a queue's jobs (ready or
 * scheduled), or one job, as records of `<key> <value>` lines.
 *
 *   inspect server\r\n
 *   inspect queues <cursor-offset> <limit>\r\n
 *   inspect queue <name>\r\n
 *   inspect jobs <name> <cursor-offset> <limit>\r\n
 *   inspect scheduled-jobs <name> <cursor-offset> <limit>\r\n
 *   inspect job <id>\r\n
 *
 * Replies `+OK <n>\r\n` and n records, or `-NOT-FOUND` for a queue or job this door does
 * not know (or may not touch: `inspect queues` leaves such a queue out).
 */
import type { PulledJob, PullStats } from '../pull-client.js';
import type { WorkqDoor } from './door.js';
import { NOT_FOUND, inspectReply, workqTime } from './replies.js';
import type { InspectRequest } from './requests.js';

export async function inspect(door: WorkqDoor, req: InspectRequest): Promise<Buffer> {
  const { client } = door;
  switch (req.what) {
    case 'server':
      await door.noteAllStats();
      return inspectReply([
        {
          label: 'server',
          pairs: [
            ['active-clients', door.clients],
            ['evicted-jobs', door.evictedTotal],
            ['started', workqTime(door.started)],
          ],
        },
      ]);
    case 'queues': {
      const names = door.allNames().slice(req.offset, req.offset + req.limit);
      const records = [];
      for (const name of names) records.push(queueRecord(name, await door.stats(name)));
      return inspectReply(records);
    }
    case 'queue':
      if (!door.known(req.name)) return NOT_FOUND;
      return inspectReply([queueRecord(req.name, await door.stats(req.name))]);
    case 'jobs':
    case 'scheduled-jobs': {
      if (!door.known(req.name)) return NOT_FOUND;
      // Listed without payloads (100 of 1 MiB would not fit one reply of the queue socket), then each with its own.
      const listed = await client.list(req.name, req.what === 'jobs' ? 'ready' : 'delayed', req.offset, req.limit);
      const jobs: PulledJob[] = [];
      for (const job of listed) {
        const full = await client.peek(req.name, job.id, { all: true });
        if (full) jobs.push(full);
      }
      return inspectReply(jobs.map(jobRecord));
    }
    case 'job': {
      const target = door.locate(req.id);
      const job = target && (await client.peek(target.queue, target.id, { all: true }));
      return job ? inspectReply([jobRecord(job)]) : NOT_FOUND;
    }
  }
}

/** Workq's job state numbers: 0 NEW, 1 COMPLETED, 2 FAILED, 3 PENDING, 4 LEASED. */
function stateNumber(job: PulledJob): number {
  if (job.state === 'run') return 4;
  if (job.state === 'done') return 1;
  if (job.state === 'err') return 2;
  return job.count > 0 || job.fails > 0 ? 3 : 0;
}

function jobRecord(job: PulledJob): { label: string; pairs: Array<readonly [string, string | number | Buffer]> } {
  const payload = Buffer.from(job.payload ?? '', 'base64');
  const pairs: Array<readonly [string, string | number | Buffer]> = [
    ['name', job.queue],
    ['ttr', job.ttr_ms ?? 0],
    ['ttl', job.ttl ?? '0'],
    ['payload-size', payload.length],
    ['payload', payload],
    ['max-attempts', job.max_attempts ?? 0],
    ['attempts', job.count],
    ['max-fails', job.max_fails],
    ['fails', job.fails],
    ['priority', job.priority],
    ['state', stateNumber(job)],
    ['created', workqTime(job.created_ms)],
  ];
  if (job.scheduled_at !== null) pairs.push(['time', workqTime(job.scheduled_at)]);
  return { label: job.ext_id ?? job.id, pairs };
}

function queueRecord(name: string, s: PullStats): { label: string; pairs: Array<readonly [string, number]> } {
  return {
    label: name,
    pairs: [
      ['ready-len', s.ready],
      ['scheduled-len', s.delayed],
    ],
  };
}
