/**
 * `num_messages`: how many messages each state holds, from memory. Precondition: none
 * (answers while DOWN). On disk: nothing. Errors: none. Reply: `{prep, que, run, done,
 * relayed, err}`.
 */
import type { State } from '../../domain/states.js';
import { anyArg } from '../args.js';
import { command } from '../command.js';
import { numMessages as counts } from '../state.js';

export const numMessages = command({ whileDown: true, arg: anyArg, run: (s): Record<State, number> => counts(s) });
