/**
 * `clean` (beyond RQ): remove the done, relayed and err messages over the queue's
 * retention limits (housekeeping.ts), or with `{"max_age_days": n}` those older than
 * that. Precondition: the queue is not DOWN (a clean under way stops when it goes DOWN).
 * On disk: each message renamed into the queue's trash, then deleted. Errors:
 * RQ_BAD_REQUEST `'max_age_days' must be a number of days >= 0, got <value>`. Reply:
 * `["ok", <clean report>]` (a failure of the clean is the report's `error`).
 */
import { parseCleanArgument } from '../../domain/retention.js';
import { anyArg } from '../args.js';
import { command } from '../command.js';
import type { CleanReport } from '../../rpc/queue-api.js';
import { clean as cleanQueue } from '../housekeeping.js';

export const clean = command({
  arg: anyArg,
  run: async (s, arg): Promise<['ok', CleanReport]> => ['ok', await cleanQueue(s, s.config.cleaner, parseCleanArgument(arg))],
});
