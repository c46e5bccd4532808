/**
 * A queue process's (or rq-mgr's) refusal, read once for every caller: `["fail", text,
 * code]`, RQ's `["fail", text]`, or `delete_attach_message`'s `[false, text]`. A caller
 * decides by the refusal's stable code (refusalCode), never by its text, and a front door
 * that passes a refusal on to its own client passes it in RQ's two-element shape (asRq),
 * so its output stays RQ's.
 */
import { RqError, isErrorCode, type ErrorCode } from '../domain/errors.js';
import type { Fail } from '../rpc/queue-api.js';

/** A refusal as RQ's clients read it: the word and the text. */
export type RqRefusal = ['fail', string] | [false, string];

/** Is `reply` a refusal (`["fail", text, code?]`, or `[false, text]`)? */
export function isRefusal(reply: unknown): reply is Fail | [false, string] {
  return Array.isArray(reply) && (reply[0] === 'fail' || reply[0] === false) && typeof reply[1] === 'string';
}

/**
 * The stable code of a refusal: its third element (every queue process's refusal has
 * one); RQ_ATTACH for `[false, text]`, and RQ_UPSTREAM for a refusal without a code (one
 * of rq-mgr's, in RQ's two elements).
 */
export function refusalCode(reply: Fail | [false, string]): ErrorCode {
  if (reply[0] === false) return 'RQ_ATTACH';
  return isErrorCode(reply[2]) ? reply[2] : 'RQ_UPSTREAM';
}

/** A refusal in RQ's shape: without the code (what RQ's routes and tools printed). */
export function asRq(reply: Fail | [false, string]): RqRefusal {
  return reply[0] === false ? [false, reply[1]] : ['fail', reply[1]];
}

/** A refusal as an RqError: its stable code and its text, and the refusal in RQ's shape for a caller that shows it. */
export class Refused extends RqError {
  readonly refusal: RqRefusal;
  constructor(reply: Fail | [false, string]) {
    super(refusalCode(reply), reply[1]);
    this.refusal = asRq(reply);
  }
}
