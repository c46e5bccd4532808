/**
 * `prep_message`: a new message in prep, to get attachments before
 * `commit_message`. With `"_announce": true` its full id is announced before the commit.
 * Precondition: the queue is not DOWN. On disk: `prep/<id>/msg`, one durable commit.
 * Errors: as create_message. Reply: `["ok", <full id>]`.
 */
import { anyArg } from '../args.js';
import { announcer, command } from '../command.js';
import { createMessage } from '../create.js';
import { fullIdOf } from '../state.js';

export const prepMessage = command({
  writes: true,
  arg: anyArg,
  run: async (s, arg, conn): Promise<['ok', string]> => ['ok', await createMessage(s, arg, 'prep', announcer(arg, conn, (id) => fullIdOf(s, id)))],
});
