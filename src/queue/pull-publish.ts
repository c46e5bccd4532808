/**
 * The fields of a pull message as `publish` and `set` give them (the argument schema,
 * shared by the two commands), how they land in its `msg`, and the making of a new pull
 * message: its payload as `attach/payload`, and its external id claimed first and fsynced
 * with the commit (store/ext-ids.ts), so two publishes of one id cannot both succeed.
 */
import * as v from 'valibot';
import { RqError } from '../domain/errors.js';
import { PARAM_KEYS, buildMessage, isPlainObject, type Message, type MessageInput } from '../domain/message.js';
import { markerContent } from '../store/ext-ids.js';
import type { Allocated } from '../store/message-store.js';
import { anyValue, args, optAttributes, optBase64, optBoolean, optExtId, optInstant, optMs, optNumber, optOneOf, optString } from './args.js';
import { makeMessage } from './create.js';
import { extIndexOf, stillHolds } from './pull-messages.js';
import { PAYLOAD } from './pull-view.js';
import { fullIdOf, nowSec, type QueueState } from './state.js';

/** The params a pull message may carry. */
type Params = Partial<Record<(typeof PARAM_KEYS)[number], unknown>>;

/** The argument of publish and set, checked in this order. */
export const publishArg = args({
  params: v.pipe(
    anyValue,
    v.transform((x) => x ?? {}),
    v.check((x) => isPlainObject(x) && Object.keys(x).every((k) => (PARAM_KEYS as readonly string[]).includes(k)), `'params' must be an object with keys among ${PARAM_KEYS.join(', ')}`),
    v.transform((x) => x as Params),
  ),
  requeue: optOneOf('requeue', ['tail', 'place']),
  ttl_ms: optMs('ttl_ms'),
  ext_scope: optOneOf('ext_scope', ['server']),
  ttl: v.pipe(
    optString('ttl'),
    v.check((x) => x === undefined || /^\d{1,20}$/.test(x), (issue) => `'ttl' must be a decimal number of ms, got ${JSON.stringify(issue.input)}`),
  ),
  src: optString('src'),
  payload: optBase64('payload'),
  ext_id: optExtId(),
  delay_ms: optMs('delay_ms'),
  tries: optNumber('tries', { min: 1, integer: true }),
  max_count: optNumber('max_count', { min: 0, integer: true }),
  priority: optNumber('priority'),
  rank: optNumber('rank'),
  sort_key: optString('sort_key'),
  due_at: optInstant('due_at'),
  expires_at: optInstant('expires_at'),
  ttl_final: optBoolean('ttl_final'),
  ttr_ms: optMs('ttr_ms'),
  max_fails: optNumber('max_fails', { min: 0, integer: true }),
  scheduled_at: optInstant('scheduled_at'),
  ephemeral: optBoolean('ephemeral'),
  max_attempts: optNumber('max_attempts', { min: 0, integer: true }),
  attributes: optAttributes('attributes'),
});

export type PublishFields = v.InferOutput<typeof publishArg>;

/** The pull fields of a message from a publish or set (those not given are removed). */
export function applyFields(msg: Message, f: PublishFields, now: number): void {
  const set = <K extends keyof Message>(key: K, value: Message[K] | undefined): void => {
    if (value === undefined) delete msg[key];
    else msg[key] = value;
  };
  // A TTL of 0 is none.
  const ttlMs = f.ttl_ms === 0 ? undefined : f.ttl_ms;
  set('ext_id', f.ext_id);
  set('priority', f.priority);
  set('rank', f.rank);
  set('sort_key', f.sort_key);
  set('expires_at', f.expires_at ?? (ttlMs === undefined ? undefined : now + ttlMs));
  set('tries', f.tries);
  set('requeue', f.requeue);
  set('ext_scope', f.ext_scope);
  set('ttl_final', f.ttl_final);
  set('ttl', f.ttl);
  set('ttr_ms', f.ttr_ms);
  set('max_fails', f.max_fails);
  set('scheduled_at', f.scheduled_at);
  set('ephemeral', f.ephemeral);
  set('max_attempts', f.max_attempts);
  set('attributes', f.attributes);
  msg.due = (f.due_at ?? now + (f.delay_ms ?? 0)) / 1000;
  if (f.max_count !== undefined) msg.max_count = f.max_count;
}

/** A new pull message in que: payload, external id (claimed first, fsynced with the commit), the pull fields. */
export async function createPullMessage(s: QueueState, f: PublishFields, allocated?: Allocated): Promise<Message> {
  const extId = f.ext_id;
  const input: MessageInput = { dest: s.name, src: f.src ?? 'pull', ...f.params };
  const files = f.payload ? { [PAYLOAD]: f.payload } : {};
  const index = extIndexOf(s, f.ext_scope);
  let claimed: string | undefined;
  let settle = (): void => undefined;
  try {
    return await makeMessage(
      s,
      (id) => {
        const m = buildMessage(input, id, fullIdOf(s, id), nowSec());
        applyFields(m, f, Date.now());
        m.rev = 1;
        return m;
      },
      'que',
      {
        files,
        marker: (msg) =>
          extId === undefined
            ? undefined
            : {
                content: markerContent(s.name, msg.msg_id, extId),
                dir: index.dir,
                claim: (file) => {
                  if (!index.claim(extId, file, (held) => stillHolds(s, held, f.ext_scope))) {
                    const where = f.ext_scope === 'server' ? 'this server' : `queue ${s.name}`;
                    throw new RqError('RQ_DUPLICATE', `a message with id ${extId} is already in ${where}`);
                  }
                  claimed = msg.msg_id;
                  s.pull.creating.set(claimed, new Promise((r) => (settle = r)));
                },
              },
        ...(allocated ? { allocated } : {}),
      },
    );
  } finally {
    if (claimed !== undefined) s.pull.creating.delete(claimed);
    settle();
  }
}
