/**
 * A Workq request's reply: the handler table, from each command's wire name to its
 * handler, and the one table from rq's error codes to Workq replies.
 *
 * A name this door may not use (a queue of a token-protected lmstfy namespace that the
 * section's `queues` patterns do not name, door-access.ts) is `Invalid Name` to `add`,
 * `schedule`, `run` and `lease`, and such a name is never recorded. A command that fails
 * gets its reply from ERROR_REPLIES; the text of an error inside rq goes to the log only.
 */
import { RqError, coerceError, type ErrorCode } from '../../domain/errors.js';
import { add } from './add.js';
import { complete } from './complete.js';
import { deleteJob } from './delete.js';
import type { WorkqDoor } from './door.js';
import { inspect } from './inspect.js';
import { lease } from './lease.js';
import { NOT_FOUND, clientError, serverError } from './replies.js';
import type { WorkqRequest } from './requests.js';
import { result } from './result.js';
import { run } from './run.js';

/** A name this door may not use (door-access.ts): Workq's error for a name it cannot take. */
const CLOSED_NAME = clientError('Invalid Name');
/** A failure inside rq (a bug, a file it cannot write): its text is for the log, not the client. */
const INTERNAL_ERROR = serverError('internal error');
/** In ERROR_REPLIES: `-SERVER-ERROR` with the error's own text. */
export const OWN_TEXT = 'own text';

/**
 * The one mapping from rq's errors to Workq replies. An error whose text rq writes
 * for a client, saying what to do next (a full disk, a queue process that is restarting
 * or DOWN), is `-SERVER-ERROR` with that text; every other error has its fixed reply,
 * whatever its text says.
 */
export const ERROR_REPLIES = {
  RQ_NOT_FOUND: NOT_FOUND,
  RQ_DUPLICATE: clientError('Duplicate job'),
  RQ_NOT_IN_STATE: serverError('Queue out of sync'),
  RQ_STALE: serverError('Queue out of sync'),
  RQ_NOT_PULL: serverError('Queue runs a script: its jobs are not for workers'),
  RQ_QUEUE_DOWN: OWN_TEXT,
  RQ_UNAVAILABLE: OWN_TEXT,
  RQ_OUTCOME_UNKNOWN: OWN_TEXT,
  RQ_NO_SPACE: OWN_TEXT,
  RQ_BAD_MESSAGE: INTERNAL_ERROR,
  RQ_BAD_REQUEST: INTERNAL_ERROR,
  RQ_QUEUE_NOT_FOUND: INTERNAL_ERROR,
  RQ_ATTACH: INTERNAL_ERROR,
  RQ_IO: INTERNAL_ERROR,
  RQ_PROTOCOL: INTERNAL_ERROR,
  RQ_CONFIG: INTERNAL_ERROR,
  RQ_FORBIDDEN: INTERNAL_ERROR,
  RQ_UPSTREAM: INTERNAL_ERROR,
  RQ_TOO_LARGE: INTERNAL_ERROR,
  RQ_BUSY: INTERNAL_ERROR,
  RQ_ENCODED_BODY: INTERNAL_ERROR,
} as const satisfies Record<ErrorCode, Buffer | typeof OWN_TEXT>;

/** The request names a queue this door may not use. */
function isClosedName(door: WorkqDoor, req: WorkqRequest): boolean {
  if (req.cmd === 'add' || req.cmd === 'schedule' || req.cmd === 'run') return !door.mayTouch(req.name);
  return req.cmd === 'lease' && !req.names.every(door.mayTouch);
}

/** The handler of a request, by its command's wire name. */
function handle(door: WorkqDoor, req: WorkqRequest, gone: AbortSignal): Promise<Buffer> {
  switch (req.cmd) {
    case 'add':
    case 'schedule':
      return add(door, req);
    case 'run':
      return run(door, req, gone);
    case 'result':
      return result(door, req, gone);
    case 'lease':
      return lease(door, req, gone);
    case 'complete':
    case 'fail':
      return complete(door, req);
    case 'delete':
      return deleteJob(door, req);
    case 'inspect':
      return inspect(door, req);
  }
}

/** A request's reply; a failed command's through ERROR_REPLIES: what went wrong inside is logged, never sent. */
export async function answer(door: WorkqDoor, req: WorkqRequest, gone: AbortSignal): Promise<Buffer> {
  try {
    if (isClosedName(door, req)) return CLOSED_NAME;
    return await handle(door, req, gone);
  } catch (e) {
    const code = e instanceof RqError ? e.code : undefined;
    if (code !== 'RQ_NOT_FOUND' && code !== 'RQ_DUPLICATE') door.log.error({ cmd: req.cmd, err: coerceError(e).message }, 'workq command failed');
    if (code === undefined) return INTERNAL_ERROR;
    const reply = ERROR_REPLIES[code];
    return reply === OWN_TEXT ? serverError(oneLine(coerceError(e).message)) : reply;
  }
}

function oneLine(text: string): string {
  return text.replace(/[\r\n]+/g, ' ');
}
