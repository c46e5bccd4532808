/**
 * The RQ version rq answers to (rq-mgr's `version` command, a script's RQ_VER): RQ's
 * last, so that clients that check it keep working.
 */
export const RQ_VERSION = '1.18.3';
