/**
 * `host_stats` (beyond RQ): the `stats` of the queues served by the process that serves
 * this one, by queue name, in one reply: the queues of a host process (loaded or put away;
 * served-queue.ts), or just this queue for a process of its own; with `queues`, only those
 * of them. The dashboard, `/q.json` and `/metrics` ask it once per process instead of
 * `stats` once per queue. Precondition: none (answers while DOWN). On disk: nothing.
 * Errors: RQ_BAD_REQUEST `'queues' must be an array of queue names, got <value>`.
 */
import * as v from 'valibot';
import type { QueueStatus } from '../../rpc/queue-api.js';
import { args } from '../args.js';
import { command } from '../command.js';

export const hostStats = command({
  whileDown: true,
  arg: args({
    queues: v.nullish(
      v.array(v.string(), (issue) => `'queues' must be an array of queue names, got ${JSON.stringify(issue.input)}`),
      () => undefined,
    ),
  }),
  run: (s, a): Record<string, QueueStatus> => s.hostStats(a.queues),
});
