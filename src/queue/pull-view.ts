/**
 * What the pull commands show of a message (the front doors' PulledJob), and a finished
 * message's outcome as `result_wait` answers it. The body of a pull message is its
 * `attach/payload`, its result `attach/result`; both are read through the store.
 */
import { idTimeMs } from '../domain/ids.js';
import { PARAM_KEYS, attributesOf, dueMs, type Message } from '../domain/message.js';
import type { State } from '../domain/states.js';
import type { PullResult, PulledView } from '../rpc/queue-api.js';
import type { MessageStore } from '../store/message-store.js';

/** The attachment that holds a pull message's body. */
export const PAYLOAD = 'payload';
/** The attachment that holds a finished message's result. */
export const RESULT = 'result';

/** What the pull commands show of a message of queue `queue`; `withPayload` false leaves it null (listings). */
export function pulledView(store: MessageStore, queue: string, state: State, msg: Message, withPayload = true): PulledView {
  // No payload: an RQ-native message.
  const payload = withPayload ? (store.readAttachment(state, msg.msg_id, PAYLOAD)?.toString('base64') ?? null) : null;
  return {
    queue,
    id: msg.msg_id,
    ext_id: typeof msg.ext_id === 'string' ? msg.ext_id : null,
    state,
    payload,
    params: PARAM_KEYS.map((k) => msg[k] ?? null),
    src: msg.src ?? null,
    created_ms: idTimeMs(msg.msg_id) ?? 0,
    due_ms: dueMs(msg),
    expires_at: typeof msg.expires_at === 'number' ? msg.expires_at : null,
    tries: typeof msg.tries === 'number' ? msg.tries : null,
    count: msg.count ?? 0,
    max_count: msg.max_count ?? 15,
    rev: msg.rev ?? 0,
    priority: typeof msg.priority === 'number' ? msg.priority : 0,
    dead: msg.dead === true,
    lease: msg.lease ?? null,
    ttr_ms: typeof msg.ttr_ms === 'number' ? msg.ttr_ms : null,
    fails: msg.fails ?? 0,
    max_fails: msg.max_fails ?? 0,
    success: typeof msg.success === 'boolean' ? msg.success : null,
    scheduled_at: typeof msg.scheduled_at === 'number' ? msg.scheduled_at : null,
    ttl: typeof msg.ttl === 'string' ? msg.ttl : null,
    max_attempts: typeof msg.max_attempts === 'number' ? msg.max_attempts : null,
    attributes: attributesOf(msg),
  };
}

/** A finished message's outcome, from its msg and `attach/result` (none: failed by its lease running out, or finished by an ack). */
export function pullOutcome(store: MessageStore, state: 'done' | 'err', msg: Message): PullResult {
  const result = store.readAttachment(state, msg.msg_id, RESULT)?.toString('base64') ?? '';
  return { state, success: msg.success ?? state === 'done', result };
}
