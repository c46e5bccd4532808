/**
 * Queue names: the one grammar every front door checks before a name touches a path.
 *
 * Two rules. RQ's own forms (create a queue from the web, the CLI or rq-mgr's socket)
 * keep RQ's rule: RQ refuses space and `"#$%&'()*+,./:;<=>?@[]^`{|}~`,
 * and we also refuse control characters, backslash and names longer than 128. A queue
 * made now must also have an ASCII name, so no two names look alike (`ｓｅｃ` and `sec`,
 * `sec` and `sec` + U+200B); a queue with a non-ASCII name made by an older version
 * keeps working, since every lookup takes any name of either rule.
 * A queue may also have a name of the protocols' rule, shared by every pull front door
 * (Workq's job-name rule): `[A-Za-z0-9_.-]{1,255}`, plus RQMS's `$()+`,
 * so lmstfy's `<namespace>.<queue>` is a queue name. Such queues are
 * made by a protocol front door on first use.
 *
 * Whatever the rule, a name never starts with `.` (no `.`, `..`, nor the hidden
 * directories `queues/.deleted` and `queues/.ids`), and never ends in
 * `.deleted.<digits>`: that is how RQ named a deleted queue's directory, and such a
 * directory left by an older install is never taken for a live queue.
 */
/** The queues rq ships (rq-install creates them; the dashboard lists them last). */
export const BUILTIN_QUEUES = ['relay', 'webhook', 'cleaner', 'rq_router'] as const;

/** The longest queue name of the protocols' rule, in bytes (ASCII). */
export const MAX_QUEUE_NAME = 255;

const RQ_FORBIDDEN = /[\s"#$%&'()*+,./:;<=>?@[\]^`{|}~\\\p{Cc}]/u;
const PROTOCOL_NAME = /^[A-Za-z0-9_.$()+-]{1,255}$/;
const DELETED_SUFFIX = /\.deleted\.\d+$/;

/** A name RQ's own forms accept when creating a queue. */
export function isRqQueueName(name: unknown): name is string {
  return typeof name === 'string' && name.length > 0 && name.length <= 128 && !RQ_FORBIDDEN.test(name);
}

/** A name RQ's own forms accept for a queue made now: RQ's rule, in ASCII only (`[A-Za-z0-9!_-]`). */
export function isNewRqQueueName(name: unknown): name is string {
  return isRqQueueName(name) && /^[\x21-\x7e]+$/.test(name);
}

/** A name of the protocols' rule (every pull front door checks this one). */
export function isProtocolQueueName(name: unknown): name is string {
  return typeof name === 'string' && PROTOCOL_NAME.test(name) && !name.startsWith('.') && !DELETED_SUFFIX.test(name);
}

/** Any name a queue may have, by either rule: the check before a name becomes a path. */
export function isValidQueueName(name: unknown): name is string {
  return isRqQueueName(name) || isProtocolQueueName(name);
}
