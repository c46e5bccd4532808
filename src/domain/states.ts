/**
 * The message states, named exactly as the state directories of a queue
 * (`queues/<q>/<state>/`), and the table of legal moves between them.
 *
 * Who moves messages where (docs/layout.md):
 * - `prep`: created by create/prep/single_que/clone/dup; left by commit (→ que) or delete.
 * - `que`: entered by commit, requeue (resend) and start-up recovery; left by a scheduler
 *   start (→ run), coalescing into a finished message (→ done/relayed), or delete.
 * - `run`: entered by a scheduler start; left when the worker exits (→ done, relayed,
 *   err, que) or at start-up recovery (→ que).
 * - `done`, `relayed`: final, hashed by id; removed by a clean (retention.ts),
 *   which the cleaner queue asks for.
 * - `err`: final until an operator clones or deletes it, or a clean removes it. A pull
 *   queue's dead letter (err with `dead`) may also be respawned (→ que) or acked (→ done).
 * - A pull queue's `run` holds external workers' leases: entered by a lease, left by an
 *   ack (→ done), a TTR expiry or nack (→ que, or err as dead), or a set (→ que).
 */
export const STATES = ['prep', 'que', 'run', 'done', 'err', 'relayed'] as const;
export type State = (typeof STATES)[number];

/** RQ's order of the states in search results: prep, que, run, err, done, relayed. */
export const SEARCH_ORDER: readonly State[] = ['prep', 'que', 'run', 'err', 'done', 'relayed'];

/** States whose directories are hashed `YYYYMMDD/HH/MM/<id>` (the id's UTC date, hour and minute). */
export const HASHED_STATES: ReadonlySet<State> = new Set(['done', 'relayed']);

/** Every legal `from → to` move. The store refuses any other. */
export const TRANSITIONS: Readonly<Record<State, readonly State[]>> = {
  prep: ['que'],
  // err: a pull message failed before it was leased, or an unreadable one.
  que: ['run', 'done', 'relayed', 'err'],
  run: ['done', 'relayed', 'err', 'que'],
  done: [],
  // A pull queue's dead letter: acknowledged (→ done) or respawned (→ que).
  err: ['done', 'que'],
  relayed: [],
};

export function isState(value: unknown): value is State {
  return typeof value === 'string' && (STATES as readonly string[]).includes(value);
}

export function isLegalMove(from: State, to: State): boolean {
  return TRANSITIONS[from].includes(to);
}
