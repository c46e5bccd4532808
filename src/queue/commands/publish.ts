/**
 * `publish` (pull model): a new message in que with `attach/payload` and the pull fields
 * (pull-publish.ts). With `"_announce": true` its short id is announced before the commit.
 * Precondition: a pull queue (no script), not DOWN. On disk: `que/<id>/` with `msg`,
 * `attach/payload` and the external id's marker, one durable commit. Errors:
 * RQ_NOT_PULL, RQ_BAD_REQUEST naming the field, RQ_DUPLICATE `a message with id <ext id>
 * is already in queue <q>` (or `this server`), RQ_NO_SPACE. Reply: `["ok", {id, ext_id}]`.
 */
import { announcer, command } from '../command.js';
import { createPullMessage, publishArg } from '../pull-publish.js';

export const publish = command({
  writes: true,
  needsPull: true,
  arg: publishArg,
  run: async (s, f, conn): Promise<['ok', { id: string; ext_id: string | null }]> => {
    const msg = await createPullMessage(s, f, announcer(f, conn, (id) => id));
    return ['ok', { id: msg.msg_id, ext_id: msg.ext_id ?? null }];
  },
});
