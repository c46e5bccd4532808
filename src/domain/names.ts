/**
 * Queue names (spec/rq.md §10.1): the one grammar every front door checks before a name
 * touches a path. RQ refuses space and `"#$%&'()*+,./:;<=>?@[]^`{|}~`; we also refuse
 * control characters and backslash, as the spec recommends, and names longer than 128.
 */
/** The queues rq ships (rq-install creates them; the dashboard lists them last). */
export const BUILTIN_QUEUES = ['relay', 'webhook', 'cleaner', 'rq_router'] as const;

const FORBIDDEN = /[\s"#$%&'()*+,./:;<=>?@[\]^`{|}~\\\p{Cc}]/u;

export function isValidQueueName(name: unknown): name is string {
  return typeof name === 'string' && name.length > 0 && name.length <= 128 && !FORBIDDEN.test(name);
}
