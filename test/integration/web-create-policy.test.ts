/**
 * What a queue created over HTTP may run (create-policy.ts), against a real rq-mgr and web
 * process: the reproduced attack (`exec_prefix` `touch …;`), scripts outside the install
 * root and `script_dirs` (by path, by a symlink in the root, through a symlink outside
 * that could be re-pointed, and whether they can run yet or not), scripts in `queues/`
 * and in rq's own directories, `script_dirs` entries absolute and relative,
 * `exec_prefixes`, `env_vars` names (only `RQ*` by default, `web_env_vars` wider, the
 * names that change what runs never), `new_queue_link` with a bad file or a file the web
 * wrote (an attachment), RQ's form and RQ's `env_var_test.rb` link still creating queues
 * that run, configs written on disk still unlimited, and new queue names in ASCII only
 * while an older non-ASCII queue stays reachable.
 *
 * One install is shared per describe; each test uses its own queue names.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO, waitFor } from '../helpers/install.js';
import { sharedInstall } from '../helpers/web.js';

const FIXTURES = path.join(REPO, 'test/fixtures/scripts');
/** Directories outside the install root: one listed in script_dirs, one behind a relative entry, one not listed. */
const outside = fs.mkdtempSync(path.join(os.tmpdir(), 'rq-policy-outside-'));
const allowed = fs.mkdtempSync(path.join(os.tmpdir(), 'rq-policy-allowed-'));
const allowedRel = fs.mkdtempSync(path.join(os.tmpdir(), 'rq-policy-allowed-rel-'));
afterAll(() => {
  for (const dir of [outside, allowed, allowedRel]) fs.rmSync(dir, { recursive: true, force: true });
});

/** A copy of the fixture done.sh at `file`, executable. */
function doneScript(file: string): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.copyFileSync(path.join(FIXTURES, 'done.sh'), file);
  fs.chmodSync(file, 0o755);
}

/** The text of the flash (HTML-escaped as the layout shows it). */
function flashOf(html: string): string {
  return [...html.matchAll(/<div id="flash-(?:notice|error)" class="flash">([^<]*)<\/div>/g)].map((m) => m[1]).join('\n');
}

describe('queues created over HTTP', () => {
  const { t, web } = sharedInstall({
    setup: (root) => {
      doneScript(path.join(root.root, 'local/done.sh'));
      doneScript(path.join(outside, 'evil.sh'));
      doneScript(path.join(allowed, 'ok.sh'));
      doneScript(path.join(allowedRel, 'ok.sh'));
      fs.symlinkSync(path.join(outside, 'evil.sh'), path.join(root.root, 'local/link.sh'));
      fs.symlinkSync(allowedRel, path.join(root.root, 'ext'));
      // An executable file among the messages, as a local tool could leave one.
      root.addQueue({ name: 'holder', script: 'done.sh', num_workers: 0 });
      doneScript(path.join(root.queueDir('holder'), 'evil.sh'));
      // A queue an older version made, with a name new queues may no longer have.
      root.addQueue({ name: 'café', script: 'done.sh' });
      root.setMainConfig({ script_dirs: [FIXTURES, allowed, 'ext'], exec_prefixes: ['', 'bash -lc', '/usr/bin/env'] });
    },
  });
  const marker = (name: string): string => path.join(t().root, `marker-${name}`);
  const form = (fields: Record<string, string>): Record<string, string> =>
    Object.fromEntries(Object.entries({ num_workers: '1', ...fields }).map(([k, v]) => [`queue[${k}]`, v]));
  /** POST /new_queue; on 403 the body must name every one of `says`, and no queue directory may appear. */
  const refused = async (fields: Record<string, string>, ...says: string[]): Promise<string> => {
    const res = await web().postForm('/new_queue', form(fields));
    const body = await res.text();
    expect(res.status, body).toBe(403);
    expect(body).toMatch(/^403 - [^\n]+$/);
    for (const s of says) expect(body).toContain(s);
    expect(fs.existsSync(t().queueDir(fields['name']!))).toBe(false);
    return body;
  };
  /** POST /new_queue that must make a queue that runs a message to done. */
  const created = async (fields: Record<string, string>): Promise<void> => {
    const res = await web().postForm('/new_queue', form(fields));
    expect(res.status, await res.clone().text()).toBe(303);
    expect(await (await web().follow(res)).text()).toContain('queue created');
    const id = await t().send(fields['name']!, {});
    await t().waitState(fields['name']!, id, 'done');
  };

  it('refuses the reproduced attack: an exec_prefix that is a command; sending to the queue then runs nothing', async () => {
    const pwned = marker('attack');
    const body = await refused({ name: 'pwn', script: './local/done.sh', exec_prefix: `touch ${pwned};` }, 'exec_prefix', `touch ${pwned};`, '"exec_prefixes"');
    expect(body).toBe(`403 - exec_prefix "touch ${pwned};" is not allowed in a queue created over HTTP; "exec_prefixes" in config.json lists the allowed ones: "", "bash -lc", "/usr/bin/env"`);
    const send = await web().postJson('/q/pwn/new_message', { dest: 'pwn', param1: 'x' });
    expect(send.status).toBe(404);
    expect(fs.existsSync(pwned)).toBe(false);
  });

  it('answers x_format=json with ["fail", reason]', async () => {
    const res = await web().postForm('/new_queue', { ...form({ name: 'pwnjson', script: './local/done.sh', exec_prefix: 'sh -c' }), x_format: 'json' });
    expect(res.status).toBe(403);
    expect(await res.json()).toEqual(['fail', expect.stringMatching(/^exec_prefix "sh -c" is not allowed .*"exec_prefixes"/)]);
    expect(fs.existsSync(t().queueDir('pwnjson'))).toBe(false);
  });

  it('refuses a script outside the install root and script_dirs, by path or by a symlink in the root', async () => {
    const real = fs.realpathSync(path.join(outside, 'evil.sh'));
    await refused({ name: 'outer', script: path.join(outside, 'evil.sh'), exec_prefix: '' }, real, '"script_dirs"', 'outside the install root');
    await refused({ name: 'linked_out', script: './local/link.sh', exec_prefix: '' }, './local/link.sh', real, '"script_dirs"');
    await refused({ name: 'dotdot', script: `./local/../../${path.basename(outside)}/evil.sh`, exec_prefix: '' }, real);
  });

  it('refuses a script in queues/, even by the queue symlink', async () => {
    await refused({ name: 'inqueues', script: './queues/holder/evil.sh', exec_prefix: '' }, 'is in queues/');
    await refused({ name: 'inqueue', script: './queue/holder/evil.sh', exec_prefix: '' }, 'is in queues/');
  });

  it('runs a script from script_dirs, absolute or relative to the root', async () => {
    await created({ name: 'fromdirs', script: path.join(allowed, 'ok.sh'), exec_prefix: '' });
    await created({ name: 'fromrel', script: './ext/ok.sh', exec_prefix: '' });
  });

  it('refuses env_vars that change what runs, and names that are not names', async () => {
    for (const name of ['PATH', 'LD_PRELOAD', 'PYTHONPATH', 'NODE_OPTIONS', 'BASH_FUNC_id%%', 'SHELLOPTS']) {
      await refused({ name: 'envq', script: './local/done.sh', exec_prefix: '', [`env_vars][${name}`]: '/tmp/x' }, `may not set "${name}"`);
    }
    await refused({ name: 'envq', script: './local/done.sh', exec_prefix: '', 'env_vars][PATH=/tmp/evil:/usr/bin': '' }, 'is not a variable name');
  });

  it('refuses by default every env_vars name but rq’s own: OPENSSL_CONF (engines node loads) and HOME (the profile bash -lc runs) among them', async () => {
    const attach = './queues/holder/prep/1/attach/ossl.cnf';
    await refused({ name: 'ossl', script: './scripts/done.sh', exec_prefix: '', 'env_vars][OPENSSL_CONF': attach }, 'may not set "OPENSSL_CONF"', 'OpenSSL', '"web_env_vars"');
    await refused({ name: 'homeq', script: './scripts/done.sh', 'env_vars][HOME': '/tmp/evilhome' }, 'may not set "HOME"', '.bash_profile', '"web_env_vars"');
    const body = await refused({ name: 'greet', script: './scripts/done.sh', exec_prefix: '', 'env_vars][RQ_X': '1', 'env_vars][GREETING': 'hi' });
    expect(body).toBe('403 - env_vars may not set "GREETING" in a queue created over HTTP; "web_env_vars" in config.json lists the name patterns it may set: "RQ*"');
  });

  it('keeps RQ’s env_var_test.rb working: a linked config with env_vars RQTESTENV1 and RQTESTENV2 makes a queue whose message ends done', async () => {
    fs.mkdirSync(path.join(t().root, 'links'), { recursive: true });
    const env = { RQTESTENV1: 'OWEN', RQTESTENV2: '32' };
    fs.writeFileSync(path.join(t().root, 'links/good_env_var.json'), JSON.stringify({ name: 'test_env_var', script: './scripts/env.sh', num_workers: 1, exec_prefix: '', env_vars: env }));
    const res = await web().postForm('/new_queue_link', { 'queue[json_path]': 'links/good_env_var.json' });
    expect(res.status).toBe(303);
    expect(flashOf(await (await web().follow(res)).text())).toContain('queue created');
    const id = await t().send('test_env_var', {});
    await t().waitState('test_env_var', id, 'done');
    const view = await t().message('test_env_var', id);
    expect(fs.readFileSync(path.join(t().root, view['path'] as string, 'job/env.txt'), 'utf8')).toContain('RQTESTENV1=OWEN\nRQTESTENV2=32\n');
  });

  it('refuses a script reached through a symlink outside the root, which could be pointed elsewhere after the check', async () => {
    const lnkdir = path.join(outside, 'lnkdir');
    fs.symlinkSync(FIXTURES, lnkdir);
    const body = await refused({ name: 'relinked', script: path.join(lnkdir, 'done.sh'), exec_prefix: '' }, 'outside the install root as given', '"script_dirs"');
    expect(body).toContain(`(real path ${JSON.stringify(path.join(fs.realpathSync(FIXTURES), 'done.sh'))})`);
  });

  it('checks where the script lies even when it cannot run yet (missing, or not executable): rq-mgr checks that later, and it can change in between', async () => {
    fs.writeFileSync(path.join(outside, 'later.sh'), '#!/bin/sh\n');
    await refused({ name: 'later', script: path.join(outside, 'later.sh'), exec_prefix: '' }, 'outside the install root');
    await refused({ name: 'missing', script: path.join(outside, 'missing/x.sh'), exec_prefix: '' }, 'outside the install root');
    await refused({ name: 'notyet', script: './queues/holder/prep/x.sh', exec_prefix: '' }, 'is in queues/');
    // A script inside the root that does not exist is still rq-mgr's to refuse.
    const res = await web().postForm('/new_queue', form({ name: 'nosuch', script: './local/nosuch.sh', exec_prefix: '' }));
    expect(res.status).toBe(303);
    expect(flashOf(await (await web().follow(res)).text())).toContain('script ./local/nosuch.sh does not exist or is not executable');
  });

  it('refuses a script in rq’s own directories (programs, dependencies, config, logs), by its path or its real path; runs one in libexec/', async () => {
    const says = "one of rq's own directories (node_modules/, dist/, bin/, config/, log/)";
    for (const rel of ['bin/rq', 'node_modules/.bin/tool', 'dist/tool.sh', 'config/tool.sh', 'log/tool.sh']) {
      doneScript(path.join(t().root, rel));
      await refused({ name: 'own', script: `./${rel}`, exec_prefix: '' }, `is in ${rel.slice(0, rel.indexOf('/'))}/, ${says}`);
    }
    fs.symlinkSync(path.join(t().root, 'bin/rq'), path.join(t().root, 'local/rq-link'));
    await refused({ name: 'own', script: './local/rq-link', exec_prefix: '' }, `is in bin/, ${says}`);
    fs.symlinkSync(path.join(t().root, 'local/done.sh'), path.join(t().root, 'bin/done-link'));
    await refused({ name: 'own', script: './bin/done-link', exec_prefix: '' }, `is in bin/, ${says}`);
    doneScript(path.join(t().root, 'libexec/mine_script'));
    await created({ name: 'mine', script: './libexec/mine_script', exec_prefix: '' });
  });

  it('keeps RQ’s form working: a script inside the root with exec_prefix "", the form’s "bash -lc ", none, and env_vars of rq’s own names', async () => {
    const res = await web().postForm('/new_queue', form({ name: 'rqform', script: './local/done.sh', exec_prefix: '' }));
    expect(res.status).toBe(303);
    expect(flashOf(await (await web().follow(res)).text())).toBe('New queue created: rqform');
    const id = await t().send('rqform', {});
    await t().waitState('rqform', id, 'done');
    await created({ name: 'formdefault', script: './local/done.sh', exec_prefix: 'bash -lc ' });
    await created({ name: 'noprefix', script: './local/done.sh' });
    await created({ name: 'withenv', script: './scripts/done.sh', exec_prefix: '', 'env_vars][RQTESTENV1': 'OWEN', 'env_vars][RQ_X': '1' });
    await created({ name: 'listed', script: './local/done.sh', exec_prefix: '/usr/bin/env' });
  });

  it('refuses new_queue_link to a file that names a bad exec_prefix, and to a file in queues/ (an attachment the web wrote)', async () => {
    const pwned = marker('link');
    fs.mkdirSync(path.join(t().root, 'links'), { recursive: true });
    fs.writeFileSync(path.join(t().root, 'links/bad.json'), JSON.stringify({ name: 'linkbad', script: './local/done.sh', num_workers: 1, exec_prefix: `touch ${pwned};` }));
    const bad = await web().postForm('/new_queue_link', { 'queue[json_path]': 'links/bad.json' });
    expect(bad.status).toBe(403);
    expect(await bad.text()).toContain('"exec_prefixes"');
    expect(fs.existsSync(t().queueDir('linkbad'))).toBe(false);

    // A good config uploaded as an attachment: the web could replace it after the link, and a restart would run the new one.
    const prep = (await (await web().postJson('/q/holder/new_message', { dest: 'holder', _method: 'prep' })).json()) as [string, string];
    const id = prep[1].slice(prep[1].lastIndexOf('/') + 1);
    const upload = new FormData();
    upload.append('x_format', 'json');
    upload.append('filedata', new Blob([JSON.stringify({ name: 'linkatt', script: './local/done.sh', num_workers: 1, exec_prefix: '' })]), 'c.json');
    expect(await (await web().postMultipart(`/q/holder/${id}/attach/new`, upload)).json()).toEqual(['ok', expect.stringContaining('Attached successfully')]);
    const attached = `queues/holder/prep/${id}/attach/c.json`;
    fs.symlinkSync(path.join(t().root, attached), path.join(t().root, 'links/att.json'));
    for (const jsonPath of [attached, 'links/att.json']) {
      const res = await web().postForm('/new_queue_link', { 'queue[json_path]': jsonPath });
      expect(res.status, jsonPath).toBe(403);
      expect(await res.text()).toContain('is in queues/, which the web writes');
    }
    expect(fs.existsSync(t().queueDir('linkatt'))).toBe(false);

    fs.writeFileSync(path.join(t().root, 'links/good.json'), JSON.stringify({ name: 'linkgood', script: './local/done.sh', num_workers: 1, exec_prefix: '' }));
    const good = await web().postForm('/new_queue_link', { 'queue[json_path]': 'links/good.json' });
    expect(good.status).toBe(303);
    expect(fs.readlinkSync(path.join(t().queueDir('linkgood'), 'config.json'))).toBe(fs.realpathSync(path.join(t().root, 'links/good.json')));
  });

  it('leaves configs written on disk unlimited: any exec_prefix runs after rq-mgr reload', async () => {
    const touched = marker('handmade');
    t().addQueue({ name: 'handmade', script: path.join(outside, 'evil.sh'), exec_prefix: `touch ${touched};`, env_vars: { PATH: process.env['PATH'] } });
    expect((await t().bin('rq-mgr', ['reload'])).code).toBe(0);
    await waitFor(async () => (await t().rpc('handmade', 'ping', '')) !== null, 10_000, 'queue handmade to answer');
    const id = await t().send('handmade', {});
    await t().waitState('handmade', id, 'done');
    expect(fs.existsSync(touched)).toBe(true);
  });

  it.each([['\uff53\uff45\uff43'], ['sec\u200b'], ['relay\u200b'], ['a\u202eb'], ['sec\u00ad'], ['naïve']])('refuses the new queue name %j, which is not ASCII', async (name) => {
    const res = await web().postForm('/new_queue', form({ name, script: './local/done.sh', exec_prefix: '' }));
    expect(res.status).toBe(303);
    const landed = await web().follow(res);
    expect(landed.status).toBe(404);
    const body = await landed.text();
    expect(body).toContain('queue name has invalid characters');
    expect(body).not.toContain('queue created');
    expect(fs.existsSync(t().queueDir(name))).toBe(false);
  });

  it('keeps a queue with a non-ASCII name made by an older version reachable', async () => {
    const res = await web().get(`/q/${encodeURIComponent('café')}.txt`);
    expect(res.status).toBe(200);
    expect(await res.text()).toMatch(/^status: UP\n/);
    const id = await t().send('café', {});
    await t().waitState('café', id, 'done');
  });
});

describe('queues created over HTTP, with web_env_vars ["*"]', () => {
  const { t, web } = sharedInstall({ setup: (root) => root.setMainConfig({ web_env_vars: ['*'] }) });
  const form = (fields: Record<string, string>): Record<string, string> =>
    Object.fromEntries(Object.entries({ num_workers: '1', script: './scripts/done.sh', exec_prefix: '', ...fields }).map(([k, v]) => [`queue[${k}]`, v]));

  it('lets env_vars set any other name', async () => {
    const res = await web().postForm('/new_queue', form({ name: 'greet', 'env_vars][GREETING': 'hi', 'env_vars][LANG': 'C' }));
    expect(res.status).toBe(303);
    const id = await t().send('greet', {});
    await t().waitState('greet', id, 'done');
  });

  it('still refuses the names that change what runs', async () => {
    for (const name of ['OPENSSL_CONF', 'HOME', 'PATH', 'LD_PRELOAD', 'NODE_OPTIONS', 'BASH_ENV', 'ENV', 'PYTHONPATH', 'GCONV_PATH', 'XDG_CONFIG_HOME', 'GIT_SSH_COMMAND', 'http_proxy', 'TMPDIR']) {
      const res = await web().postForm('/new_queue', form({ name: 'floor', [`env_vars][${name}`]: '/tmp/x' }));
      const body = await res.text();
      expect(res.status, body).toBe(403);
      expect(body).toMatch(new RegExp(`^403 - env_vars may not set "${name}" in a queue created over HTTP \\(.+\\), whatever "web_env_vars" says; set it in the queue's config.json on disk$`));
      expect(fs.existsSync(t().queueDir('floor'))).toBe(false);
    }
  });
});
