/**
 * The dashboard's bulk actions on many messages of one queue (the queue's `bulk` command,
 * the web's `POST /q/<q>/bulk`): which operations there are, the states each applies to,
 * and how many messages one `bulk` call takes. The web and the queue both check a request
 * against this one table.
 *
 * | op     | from                     | what happens                                                  |
 * | ------ | ------------------------ | ------------------------------------------------------------- |
 * | retry  | err                      | back to que, same id and attachments, due now, count 0        |
 * | clone  | err, done, relayed       | a new message in que (as `clone_message`); the source stays   |
 * | delete | que, err, done, relayed  | removed (as `delete_message`)                                 |
 * | move   | que, err, done, relayed  | a new message in another queue (`moved_from`), this one removed |
 */
import type { State } from './states.js';

export const BULK_OPS = ['retry', 'clone', 'delete', 'move'] as const;
export type BulkOp = (typeof BULK_OPS)[number];

/** The states each operation takes messages from. */
export const BULK_FROM: Readonly<Record<BulkOp, readonly State[]>> = {
  retry: ['err'],
  clone: ['err', 'done', 'relayed'],
  delete: ['que', 'err', 'done', 'relayed'],
  move: ['que', 'err', 'done', 'relayed'],
};

/** The most ids one `bulk` (or `adopt`) call takes: a batch shares its group commits. */
export const BULK_BATCH = 500;

export function isBulkOp(value: unknown): value is BulkOp {
  return typeof value === 'string' && (BULK_OPS as readonly string[]).includes(value);
}

/** The operations that apply to messages in `state`. */
export function bulkOpsFor(state: State): BulkOp[] {
  return BULK_OPS.filter((op) => BULK_FROM[op].includes(state));
}
