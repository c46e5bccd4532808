/**
 * `config`: the queue's config as RQ showed it (a schedule entry's `cron_obj` is opaque).
 * Precondition: none (answers while DOWN). On disk: nothing. Errors: none. Reply:
 * `["ok", {name, script, num_workers, exec_prefix, env_vars, coalesce_params,
 * blocking_params, schedule, timeout?}]`.
 */
import type { QueueConfig } from '../../domain/queue-config.js';
import { anyArg } from '../args.js';
import { command } from '../command.js';

export interface ConfigView {
  name: string;
  script: string;
  num_workers: number;
  exec_prefix: QueueConfig['exec_prefix'];
  env_vars: QueueConfig['env_vars'];
  coalesce_params: QueueConfig['coalesce_params'];
  blocking_params: QueueConfig['blocking_params'];
  schedule: Array<{ cron: string; cron_obj: '<opaque>'; params: QueueConfig['schedule'][number]['params'] }>;
  timeout?: number;
}

export const config = command({
  whileDown: true,
  arg: anyArg,
  run: (s): ['ok', ConfigView] => {
    // RQ's keys, in RQ's order.
    const { name, script, num_workers, exec_prefix, env_vars, coalesce_params, blocking_params, schedule, timeout } = s.config;
    const cronObjs = schedule.map((e) => ({ cron: e.cron, cron_obj: '<opaque>' as const, params: e.params }));
    const view: ConfigView = { name, script, num_workers, exec_prefix, env_vars, coalesce_params, blocking_params, schedule: cronObjs };
    if (timeout !== null) view.timeout = timeout;
    return ['ok', view];
  },
});
