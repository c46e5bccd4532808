/**
 * `get_message_state`: where a message is, once no command is changing
 * it. Precondition: none. On disk: nothing (reads). Errors: RQ_BAD_REQUEST `lacking
 * 'msg_id' field`, RQ_NOT_FOUND `msg not found`. Reply: `["ok", <state>]`.
 */
import { RqError } from '../../domain/errors.js';
import type { State } from '../../domain/states.js';
import { msgIdArg } from '../args.js';
import { command } from '../command.js';
import { stateNow } from '../lookup.js';

export const getMessageState = command({
  arg: msgIdArg,
  run: async (s, { msg_id }): Promise<['ok', State]> => {
    const state = await stateNow(s, msg_id);
    if (state === undefined) throw new RqError('RQ_NOT_FOUND', 'msg not found');
    return ['ok', state];
  },
});
