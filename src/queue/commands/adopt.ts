/**
 * `adopt` (beyond RQ): the receiving half of a bulk move (bulk.ts): copies of messages of
 * queue `from`, all in `state`, made in this queue's que as `clone_message` makes a clone
 * (fields, attachments hard-linked), with `moved_from` (the source's full id) and, when
 * the source's `dest` named its own queue, this queue as `dest`. Argument: `{"from":
 * <queue>, "state": <state>, "ids": [<short id>...]}`. Precondition: the sending queue
 * holds the sources' locks, so they do not change meanwhile; this queue only reads them.
 * On disk: one new message per source, their creates sharing the group commits. Errors:
 * RQ_BAD_REQUEST naming the field. Reply: `["ok", {made: {<source id>: <new short id>},
 * failed: [{id, error}]}]`.
 */
import path from 'node:path';
import * as v from 'valibot';
import { RqError, coerceError } from '../../domain/errors.js';
import { fullId } from '../../domain/ids.js';
import { isValidQueueName } from '../../domain/names.js';
import type { BulkResult } from '../../rpc/queue-api.js';
import { queueLayout } from '../../store/layout.js';
import { anyValue, args } from '../args.js';
import { command } from '../command.js';
import type { QueueState } from '../state.js';
import { bulkIds, bulkState } from './bulk.js';
import { copyMessage } from './clone-message.js';

const fromArg = v.pipe(
  anyValue,
  v.check(isValidQueueName, (issue) => `'from' must be a queue name, got ${JSON.stringify(issue.input)}`),
  v.transform((x) => x as string),
);

export const adopt = command({
  writes: true,
  arg: args({ from: fromArg, state: bulkState, ids: bulkIds }),
  run: async (s: QueueState, a): Promise<['ok', { made: Record<string, string>; failed: BulkResult['failed'] }]> => {
    if (a.from === s.name) throw new RqError('RQ_BAD_REQUEST', `'from' must be another queue, got ${JSON.stringify(a.from)}`);
    const source = queueLayout(s.root, a.from);
    const made: Record<string, string> = {};
    const failed: BulkResult['failed'] = [];
    await Promise.all(
      a.ids.map(async (id) => {
        try {
          const dir = source.msgDir(a.state, id);
          const msg = await s.store.readGroupMsg(path.dirname(dir), id);
          const origin = { moved_from: fullId(s.host, a.from, id), ...(msg.dest === a.from ? { dest: s.name } : {}) };
          made[id] = await copyMessage(s, dir, msg, 'que', origin, 'moved; nothing');
        } catch (e) {
          failed.push({ id, error: coerceError(e).message });
        }
      }),
    );
    return ['ok', { made, failed }];
  },
});
