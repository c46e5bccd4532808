// What a queue created over HTTP may run (create-policy.ts): the pure check, on
// normalised configs and real paths given as they would be resolved.
import { describe, expect, it } from 'vitest';
import { createRefusal, linkRefusal, type CreatePolicy } from '../../src/domain/create-policy.js';
import { normaliseQueueConfig } from '../../src/domain/queue-config.js';

const POLICY: CreatePolicy = { root: '/srv/rq', scriptDirs: ['/opt/jobs'], queuesDir: '/srv/rq/queues', execPrefixes: ['', 'bash -lc'] };
const config = (raw: Record<string, unknown>) => normaliseQueueConfig({ name: 'q', script: './s.sh', num_workers: 1, ...raw });

describe('createRefusal', () => {
  it('allows a script in the root or a script dir, with an exec_prefix of the list', () => {
    expect(createRefusal(config({ exec_prefix: '' }), '/srv/rq/scripts/s.sh', POLICY)).toBeUndefined();
    expect(createRefusal(config({ exec_prefix: 'bash -lc' }), '/opt/jobs/deep/s.sh', POLICY)).toBeUndefined();
  });

  it('counts null as bash -lc, and not blanks around the prefix', () => {
    expect(createRefusal(config({}), '/srv/rq/s.sh', POLICY)).toBeUndefined();
    expect(createRefusal(config({}), '/srv/rq/s.sh', { ...POLICY, execPrefixes: [''] })).toMatch(/^exec_prefix null \(bash -lc\) is not allowed/);
    for (const prefix of ['bash -lc ', '  bash -lc', 'bash -lc\t', ' ']) expect(createRefusal(config({ exec_prefix: prefix }), '/srv/rq/s.sh', POLICY), prefix).toBeUndefined();
  });

  it('refuses any other exec_prefix, a different spacing inside it, or an escaped trailing blank', () => {
    for (const prefix of ['touch /tmp/pwned;', 'bash  -lc', 'bash -c', 'bash -lc;', 'bash -lc\\ ', 'sh']) {
      expect(createRefusal(config({ exec_prefix: prefix }), '/srv/rq/s.sh', POLICY), prefix).toContain('"exec_prefixes" in config.json');
    }
  });

  it('refuses a script outside the root and the script dirs, or in queues/, and only when it can run', () => {
    expect(createRefusal(config({ exec_prefix: '' }), '/tmp/evil.sh', POLICY)).toBe(
      'script "./s.sh" (real path "/tmp/evil.sh") is outside the install root; "script_dirs" in config.json lists the other directories a queue created over HTTP may run scripts from',
    );
    expect(createRefusal(config({ exec_prefix: '' }), '/srv/rqx/s.sh', POLICY)).toContain('outside the install root');
    expect(createRefusal(config({ exec_prefix: '' }), '/opt/jobs', POLICY)).toContain('outside the install root');
    expect(createRefusal(config({ exec_prefix: '' }), '/srv/rq/queues/q/prep/1/attach/x', POLICY)).toContain('is in queues/');
    expect(createRefusal(config({ exec_prefix: '' }), undefined, POLICY)).toBeUndefined();
  });

  it('refuses the issue’s env_vars names and the others of ENV_RULES, and names with = or NUL; allows the rest', () => {
    const refused = ['PATH', 'LD_PRELOAD', 'LD_LIBRARY_PATH', 'NODE_OPTIONS', 'BASH_ENV', 'ENV', 'PYTHONPATH', 'PYTHONSTARTUP', 'BASH_FUNC_id%%', 'SHELLOPTS', 'PS4', 'PERL5LIB', 'PERLLIB', 'PERL5OPT', 'RUBYLIB', 'RUBYOPT'];
    for (const name of refused) {
      expect(createRefusal(config({ exec_prefix: '', env_vars: { [name]: 'x' } }), '/srv/rq/s.sh', POLICY), name).toMatch(new RegExp(`^env_vars may not set "${name.replace(/[$%]/g, '\\$&')}" in a queue created over HTTP \\(.+\\); set it in the queue's config.json on disk$`));
    }
    for (const name of ['PATH=/evil:/bin', 'A\0B']) expect(createRefusal(config({ exec_prefix: '', env_vars: { [name]: '' } }), '/srv/rq/s.sh', POLICY)).toContain('is not a variable name');
    expect(createRefusal(config({ exec_prefix: '', env_vars: { A: 'x\0y' } }), '/srv/rq/s.sh', POLICY)).toContain('is not a variable name');
    // Every value given is quoted, so the reason stays one line.
    expect(createRefusal(config({ exec_prefix: '', env_vars: { 'LD_\nX': '' } }), '/srv/rq/s.sh', POLICY)).toContain('may not set "LD_\\nX"');
    expect(createRefusal(config({ exec_prefix: '', env_vars: { path: '/x', MYPATH: '/x', ENVIRONMENT: 'prod', RQ_X: '1', LANG: 'C' } }), '/srv/rq/s.sh', POLICY)).toBeUndefined();
  });
});

describe('linkRefusal', () => {
  it('refuses a linked file in queues/ only', () => {
    expect(linkRefusal('c.json', '/srv/rq/links/c.json', POLICY)).toBeUndefined();
    expect(linkRefusal('x', '/srv/rq/queues/q/prep/1/attach/c.json', POLICY)).toContain('is in queues/, which the web writes');
  });
});
