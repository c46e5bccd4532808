/**
 * The one error type of rq. Every failure a front door may need to render carries a
 * stable `code`; the `message` is RQ's own wording where RQ has one (the RPC door sends
 * `["fail", message]` verbatim), so the text is part of the contract. Each front door
 * maps codes to its vocabulary in one table.
 */
export const ERROR_CODES = {
  RQ_NOT_FOUND: 'the message does not exist',
  RQ_NOT_IN_STATE: 'the message is not in the state the command needs',
  RQ_BAD_MESSAGE: 'the message input is invalid',
  RQ_BAD_REQUEST: 'the request is malformed',
  RQ_QUEUE_DOWN: 'the queue is admin DOWN',
  RQ_QUEUE_NOT_FOUND: 'the queue does not exist or is not running',
  RQ_ATTACH: 'an attachment could not be added or removed',
  RQ_IO: 'the filesystem refused an operation',
  RQ_PROTOCOL: 'a peer broke the wire protocol',
  RQ_CONFIG: 'a configuration file is invalid',
  RQ_FORBIDDEN: 'the operation is not allowed by the configuration',
  RQ_UPSTREAM: 'rq-mgr or a queue process did not answer, or refused',
  RQ_TOO_LARGE: 'a request body is over its size limit',
  RQ_BUSY: 'request bodies in memory are at their limit, all requests together; try again later',
  RQ_ENCODED_BODY: 'the request body is compressed (a Content-Encoding other than identity), which is not read',
  RQ_DUPLICATE: 'a message with that external id is already in the queue',
  RQ_STALE: 'the message changed since the revision the request names',
  RQ_NOT_PULL: 'the queue runs a script, so external workers cannot lease its messages',
  RQ_UNAVAILABLE: 'the queue process is restarting or not answering; the request was not done (or is harmless to repeat): try again',
  RQ_OUTCOME_UNKNOWN: 'the queue process stopped before it answered, so the request may have been done; ask before you try again',
  RQ_NO_SPACE: 'the filesystem that holds the queue is full (no space left on device, or a disk quota used up)',
} as const;
export type ErrorCode = keyof typeof ERROR_CODES;

/** Whether `code` is one of the stable codes (a reply from another process may carry anything). */
export function isErrorCode(code: unknown): code is ErrorCode {
  return typeof code === 'string' && Object.hasOwn(ERROR_CODES, code);
}

export class RqError extends Error {
  override readonly name = 'RqError';
  readonly code: ErrorCode;
  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }
}

/** Turn anything thrown into an Error, once, at a boundary. */
export function coerceError(thrown: unknown): Error {
  if (thrown instanceof Error) return thrown;
  return new Error(typeof thrown === 'string' ? thrown : JSON.stringify(thrown));
}

/** The errno code of a Node system error, if it has one. */
export function errnoCode(thrown: unknown): string | undefined {
  const code = (thrown as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** Whether a failure is a full disk: ENOSPC (no space left), EDQUOT (a quota used up), or the RQ_NO_SPACE made of one. */
export function isNoSpace(thrown: unknown): boolean {
  if (thrown instanceof RqError) return thrown.code === 'RQ_NO_SPACE';
  const code = errnoCode(thrown);
  return code === 'ENOSPC' || code === 'EDQUOT';
}

/**
 * A failed write under `dir` as rq reports it: a full disk's errno (ENOSPC, EDQUOT) is
 * RQ_NO_SPACE, anything else stays as it is. `dir` is relative to the install root
 * (`queues/q1`), so the text tells an operator which disk to free and a client nothing
 * more: `no space left on device: queues/q1`.
 */
export function asNoSpace(thrown: unknown, dir: string): unknown {
  if (thrown instanceof RqError || !isNoSpace(thrown)) return thrown;
  return new RqError('RQ_NO_SPACE', `no space left on device: ${dir}`, { cause: thrown });
}

/** An error's message, then its causes' on the next lines (what an operator needs to fix it). */
export function explain(thrown: unknown): string {
  const lines: string[] = [];
  for (let e: unknown = thrown; e !== undefined && lines.length < 5; e = coerceError(e).cause) {
    const text = coerceError(e).message;
    if (!lines.some((l) => l.startsWith(text))) lines.push(text);
  }
  return lines.join('\n');
}
