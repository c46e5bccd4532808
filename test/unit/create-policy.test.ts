// What a queue created over HTTP may run (create-policy.ts): the pure check, on
// normalised configs and paths given as they would be resolved.
import { describe, expect, it } from 'vitest';
import { RQ_DIRS, createRefusal, linkRefusal, matchesPattern, type CreatePolicy, type Resolved } from '../../src/domain/create-policy.js';
import { parseMainConfig } from '../../src/domain/main-config.js';
import { normaliseQueueConfig } from '../../src/domain/queue-config.js';

/** A path as given and real (the same when no symlink is on the way). */
const at = (real: string, given = real): Resolved => ({ given, real });
const POLICY: CreatePolicy = {
  root: at('/srv/rq'),
  // `ext` in script_dirs, a symlink in the root to /data/ext.
  scriptDirs: [at('/opt/jobs'), at('/data/ext', '/srv/rq/ext')],
  queuesDir: at('/srv/rq/queues'),
  rqDirs: RQ_DIRS.map((name) => [name, at(`/srv/rq/${name}`)] as const),
  execPrefixes: ['', 'bash -lc'],
  envVars: ['RQ*'],
};
const config = (raw: Record<string, unknown>) => normaliseQueueConfig({ name: 'q', script: './s.sh', num_workers: 1, ...raw });
const S = at('/srv/rq/s.sh');

describe('createRefusal', () => {
  it('allows a script in the root or a script dir, with an exec_prefix of the list', () => {
    expect(createRefusal(config({ exec_prefix: '' }), at('/srv/rq/scripts/s.sh'), POLICY)).toBeUndefined();
    expect(createRefusal(config({ exec_prefix: 'bash -lc' }), at('/opt/jobs/deep/s.sh'), POLICY)).toBeUndefined();
    expect(createRefusal(config({ exec_prefix: '' }), at('/srv/rq/libexec/cleaner_script'), POLICY)).toBeUndefined();
    // Through a symlink in the root, or by the script dir's real path.
    expect(createRefusal(config({ exec_prefix: '' }), at('/data/ext/s.sh', '/srv/rq/ext/s.sh'), POLICY)).toBeUndefined();
    expect(createRefusal(config({ exec_prefix: '' }), at('/opt/jobs/s.sh', '/srv/rq/jobs/s.sh'), POLICY)).toBeUndefined();
    expect(createRefusal(config({ exec_prefix: '' }), at('/data/ext/s.sh'), POLICY)).toBeUndefined();
  });

  it('counts null as bash -lc, and not blanks around the prefix', () => {
    expect(createRefusal(config({}), S, POLICY)).toBeUndefined();
    expect(createRefusal(config({}), S, { ...POLICY, execPrefixes: [''] })).toMatch(/^exec_prefix null \(bash -lc\) is not allowed/);
    for (const prefix of ['bash -lc ', '  bash -lc', 'bash -lc\t', ' ']) expect(createRefusal(config({ exec_prefix: prefix }), S, POLICY), prefix).toBeUndefined();
  });

  it('refuses any other exec_prefix, a different spacing inside it, or an escaped trailing blank', () => {
    for (const prefix of ['touch /tmp/pwned;', 'bash  -lc', 'bash -c', 'bash -lc;', 'bash -lc\\ ', 'sh']) {
      expect(createRefusal(config({ exec_prefix: prefix }), S, POLICY), prefix).toContain('"exec_prefixes" in config.json');
    }
    expect(createRefusal(config({ exec_prefix: 'sh' }), S, { ...POLICY, execPrefixes: [] })).toMatch(/the allowed ones: none$/);
  });

  it('refuses a script outside the root and the script dirs, or in queues/', () => {
    expect(createRefusal(config({ exec_prefix: '' }), at('/tmp/evil.sh', '/srv/rq/s.sh'), POLICY)).toBe(
      'script "./s.sh" (real path "/tmp/evil.sh") is outside the install root; "script_dirs" in config.json lists the other directories a queue created over HTTP may run scripts from',
    );
    expect(createRefusal(config({ exec_prefix: '' }), at('/srv/rqx/s.sh'), POLICY)).toContain('outside the install root');
    expect(createRefusal(config({ exec_prefix: '' }), at('/opt/jobs'), POLICY)).toContain('outside the install root');
    expect(createRefusal(config({ exec_prefix: '' }), at('/srv/rq/queues/q/prep/1/attach/x'), POLICY)).toContain('is in queues/');
    expect(createRefusal(config({ exec_prefix: '' }), at('/srv/rq/s.sh', '/srv/rq/queues/q/prep/1/attach/x'), POLICY)).toContain('is in queues/');
  });

  it('refuses a script whose path as given lies outside, though its real path is inside: a symlink outside can be re-pointed', () => {
    expect(createRefusal(config({ exec_prefix: '', script: '/tmp/lnkdir/s.sh' }), at('/srv/rq/scripts/s.sh', '/tmp/lnkdir/s.sh'), POLICY)).toBe(
      'script "/tmp/lnkdir/s.sh" (real path "/srv/rq/scripts/s.sh") is outside the install root as given ("/tmp/lnkdir/s.sh"): the queue resolves it again before every run, and a symlink outside the root could be pointed elsewhere by then; "script_dirs" in config.json lists the other directories a queue created over HTTP may run scripts from',
    );
    expect(createRefusal(config({ exec_prefix: '' }), at('/data/ext/s.sh', '/tmp/ext/s.sh'), POLICY)).toContain('outside the install root as given');
  });

  it('refuses a script in rq’s own directories, as given or by its real path', () => {
    for (const dir of RQ_DIRS) {
      const says = `is in ${dir}/, one of rq's own directories (node_modules/, dist/, bin/, config/, log/): a queue created over HTTP never runs rq's programs or their dependencies`;
      expect(createRefusal(config({ exec_prefix: '' }), at(`/srv/rq/${dir}/x`), POLICY), dir).toContain(says);
      expect(createRefusal(config({ exec_prefix: '' }), at(`/srv/rq/${dir}/x`, '/srv/rq/local/x'), POLICY), dir).toContain(says);
      expect(createRefusal(config({ exec_prefix: '' }), at('/srv/rq/local/x', `/srv/rq/${dir}/x`), POLICY), dir).toContain(says);
    }
    expect(createRefusal(config({ exec_prefix: '' }), at('/srv/rq/node_modules/.bin/tsc'), POLICY)).toContain('is in node_modules/');
    expect(createRefusal(config({ exec_prefix: '' }), at('/srv/rq/binary/x'), POLICY)).toBeUndefined();
  });

  it('allows by default only env_vars names starting with RQ (RQ’s own test sets RQTESTENV1 and RQTESTENV2)', () => {
    expect(createRefusal(config({ exec_prefix: '', env_vars: { RQTESTENV1: 'OWEN', RQTESTENV2: '32', RQ_X: '1' } }), S, POLICY)).toBeUndefined();
    for (const name of ['GREETING', 'LANG', 'rq_x', 'ENVIRONMENT', 'X_RQ']) {
      expect(createRefusal(config({ exec_prefix: '', env_vars: { [name]: 'x' } }), S, POLICY), name).toBe(
        `env_vars may not set "${name}" in a queue created over HTTP; "web_env_vars" in config.json lists the name patterns it may set: "RQ*"`,
      );
    }
    expect(createRefusal(config({ exec_prefix: '', env_vars: { RQX: '1' } }), S, { ...POLICY, envVars: [] })).toMatch(/it may set: none$/);
    const wider = { ...POLICY, envVars: ['APP_*', 'LANG'] };
    expect(createRefusal(config({ exec_prefix: '', env_vars: { APP_MODE: 'x', LANG: 'C' } }), S, wider)).toBeUndefined();
    expect(createRefusal(config({ exec_prefix: '', env_vars: { LANGUAGE: 'x' } }), S, wider)).toContain('"web_env_vars"');
  });

  it('refuses the names of ENV_RULES even when web_env_vars allows every name, and names with = or NUL', () => {
    const all = { ...POLICY, envVars: ['*'] };
    expect(createRefusal(config({ exec_prefix: '', env_vars: { GREETING: 'hi', LANG: 'C', path: '/x', MYPATH: '/x' } }), S, all)).toBeUndefined();
    const refused = [
      ...['PATH', 'LD_PRELOAD', 'LD_LIBRARY_PATH', 'NODE_OPTIONS', 'NODE_PATH', 'BASH_ENV', 'ENV', 'PYTHONPATH', 'PYTHONSTARTUP', 'BASH_FUNC_id%%', 'SHELLOPTS', 'PS4'],
      ...['PERL5LIB', 'PERLLIB', 'PERL5OPT', 'RUBYLIB', 'RUBYOPT', 'OPENSSL_CONF', 'OPENSSL_MODULES', 'HOME', 'GCONV_PATH', 'LOCPATH', 'XDG_CONFIG_HOME', 'ZDOTDIR'],
      ...['JAVA_TOOL_OPTIONS', 'GIT_SSH_COMMAND', 'http_proxy', 'HTTPS_PROXY', 'TMPDIR', 'GLIBC_TUNABLES', 'BASHOPTS', 'SSL_CERT_FILE'],
    ];
    for (const name of refused) {
      expect(createRefusal(config({ exec_prefix: '', env_vars: { [name]: 'x' } }), S, all), name).toMatch(
        new RegExp(`^env_vars may not set "${name.replace(/[$%]/g, '\\$&')}" in a queue created over HTTP \\(.+\\), whatever "web_env_vars" says; set it in the queue's config.json on disk$`),
      );
    }
    for (const name of ['PATH=/evil:/bin', 'A\0B']) expect(createRefusal(config({ exec_prefix: '', env_vars: { [name]: '' } }), S, all)).toContain('is not a variable name');
    expect(createRefusal(config({ exec_prefix: '', env_vars: { A: 'x\0y' } }), S, all)).toContain('is not a variable name');
    // Every value given is quoted, so the reason stays one line.
    expect(createRefusal(config({ exec_prefix: '', env_vars: { 'LD_\nX': '' } }), S, all)).toContain('may not set "LD_\\nX"');
    expect(createRefusal(config({ exec_prefix: '', env_vars: { 'A\nB': '' } }), S, POLICY)).toContain('may not set "A\\nB"');
  });
});

describe('matchesPattern', () => {
  it('takes * for any run of characters, anywhere, and everything else literally', () => {
    const yes: Array<[string, string]> = [['RQ*', 'RQ'], ['RQ*', 'RQTESTENV1'], ['*', ''], ['*_proxy', 'http_proxy'], ['A*B*C', 'AxxBxxC'], ['A*B*C', 'ABC'], ['a.b', 'a.b'], ['A**', 'A']];
    const no: Array<[string, string]> = [['RQ*', 'XRQ'], ['A*B*C', 'AxC'], ['A*A', 'A'], ['a.b', 'axb'], ['PATH', 'PATH2'], ['*_proxy', 'proxy'], ['', 'A']];
    for (const [p, n] of yes) expect(matchesPattern(p, n), `${p} ${n}`).toBe(true);
    for (const [p, n] of no) expect(matchesPattern(p, n), `${p} ${n}`).toBe(false);
  });

});

describe('linkRefusal', () => {
  it('refuses a linked file in queues/ only', () => {
    expect(linkRefusal('c.json', '/srv/rq/links/c.json', POLICY)).toBeUndefined();
    expect(linkRefusal('x', '/srv/rq/queues/q/prep/1/attach/c.json', POLICY)).toContain('is in queues/, which the web writes');
  });
});

describe('web_env_vars in config.json', () => {
  it('defaults to rq’s own namespace, and must be an array of strings', () => {
    expect(parseMainConfig('{}').webEnvVars).toEqual(['RQ*']);
    expect(parseMainConfig('{"web_env_vars": ["RQ*", "APP_*"]}').webEnvVars).toEqual(['RQ*', 'APP_*']);
    expect(() => parseMainConfig('{"web_env_vars": "*"}')).toThrow('Bad config file: "web_env_vars" must be an array of strings, got "*"');
  });
});
