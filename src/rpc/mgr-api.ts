/**
 * rq-mgr's RPC, as types (its commands are in supervisor/mgr-commands.ts): each command's
 * argument, a bare string as RQ's queue manager takes it (a queue name, a config file's
 * path, or the JSON text of a new queue's form; '' for none), and its reply. Every command
 * may also answer a refusal (Fail), `["fail", <the error's text>]` for one that failed.
 */
import type { Fail, Ok } from './queue-api.js';

/** `restarts`: how many times rq-mgr restarted each process after an unexpected death. */
export interface RestartCounts {
  queues: Record<string, number>;
  web: number;
}

/** A queue made from a form or a config file: RQ's word for it. */
type Created = ['success', string];

export interface MgrApi {
  ping: { arg: ''; reply: ['pong'] | Fail };
  environment: { arg: ''; reply: [string | null] | Fail };
  version: { arg: ''; reply: [string] | Fail };
  uptime: { arg: ''; reply: [number] | Fail };
  queues: { arg: ''; reply: string[] | Fail };
  restarts: { arg: ''; reply: RestartCounts | Fail };
  pause_queue: { arg: string; reply: Ok<string> | Fail };
  resume_queue: { arg: string; reply: Ok<string> | Fail };
  down_queue: { arg: string; reply: Ok<string> | Fail };
  up_queue: { arg: string; reply: Ok<string> | Fail };
  restart_queue: { arg: string; reply: Ok<string> | Fail };
  /** The argument is the JSON text of the form's `queue` fields. */
  create_queue: { arg: string; reply: Created | Fail };
  create_queue_link: { arg: string; reply: Created | Fail };
  /** `<name>` or `<name> <door>`: the pull front door that makes it (lmstfy, cloudq, rqms, workq). */
  create_pull_queue: { arg: string; reply: Ok<string> | Fail };
  delete_queue: { arg: string; reply: Ok<'started deleting queue'> | Fail };
}

export type MgrCommand = keyof MgrApi;
export type MgrReplyOf<K extends MgrCommand> = MgrApi[K]['reply'];
