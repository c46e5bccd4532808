/**
 * `messages`: a state's messages in RQ's listing order. Beyond RQ, an
 * `offset` pages the listing and a paged reply gives every message's status text.
 * Precondition: none (answers while DOWN). On disk: nothing (reads). Errors:
 * RQ_BAD_REQUEST `invalid or missing 'state' field (<state>)`, `'offset' must be an
 * integer >= 0, got <value>` (and `'limit'`). Reply: `[{msg_id, ...}, ...]`; RQ listed all
 * of err whatever the limit, so an unpaged err listing still does.
 */
import * as v from 'valibot';
import { isState, type State } from '../../domain/states.js';
import { anyValue, args, optCount } from '../args.js';
import { command } from '../command.js';
import { messages as listed, type ListingRow } from '../listings.js';

export const messages = command({
  whileDown: true,
  arg: args({
    state: v.pipe(
      anyValue,
      // RQ's text shows whatever was sent as Ruby's to_s would, an object included.
      // eslint-disable-next-line @typescript-eslint/no-base-to-string
      v.check(isState, (issue) => `invalid or missing 'state' field (${String(issue.input ?? '')})`),
      v.transform((x) => x as State),
    ),
    offset: optCount('offset'),
    limit: optCount('limit'),
  }),
  run: (s, { state, offset, limit = Infinity }): ListingRow[] => {
    if (offset === undefined) return listed(s, state, 0, state === 'err' ? Infinity : limit, false);
    return listed(s, state, offset, limit, true);
  },
});
