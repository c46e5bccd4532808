/**
 * The files that hold secrets are owner-only (secret-files.ts), and so are the sockets
 * that create queues and run commands: `config/config.json` as rq-install writes it (also
 * over an existing one with --force), `config/lmstfy_tokens.json` once a token is minted,
 * existing group- or world-readable ones made 0600 at rq-mgr's start with a log line, and
 * `config/queuemgr.sock` and each `queues/<q>/queue.sock` created 0600 under any umask.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { useTestRoot, waitFor } from '../helpers/install.js';
import { useScratchDir } from '../helpers/ops-tools.js';
import { startProtocols } from '../helpers/protocols.js';
import { REPO, runBin } from '../helpers/run-bin.js';

const modeOf = (file: string): number => fs.statSync(file).mode & 0o777;

describe('rq-install', () => {
  const scratch = useScratchDir('rq-secret-install-');

  it('writes config/config.json 0600, and again 0600 over a 0644 one with --force', async () => {
    const root = scratch();
    expect((await runBin('bin/rq-install', [], { RQ_ROOT: root })).code).toBe(0);
    const config = path.join(root, 'config/config.json');
    expect(modeOf(config).toString(8)).toBe('600');
    fs.chmodSync(config, 0o644);
    expect((await runBin('bin/rq-install', ['--force'], { RQ_ROOT: root })).code).toBe(0);
    expect(modeOf(config).toString(8)).toBe('600');
  });
});

describe('rq-mgr and the web', () => {
  const t = useTestRoot();

  it('writes config/lmstfy_tokens.json 0600 when the lmstfy admin mints a token', async () => {
    const p = await startProtocols(t(), { lmstfy: { auth: false } });
    const res = await fetch(`${p.base('lmstfy')}/token/secretns?description=test`, { method: 'POST' });
    expect(res.status).toBe(201);
    expect(modeOf(path.join(t().root, 'config/lmstfy_tokens.json')).toString(8)).toBe('600');
  });

  it('makes existing readable secret files 0600 at start, with a log line naming each and its old mode', async () => {
    const config = path.join(t().root, 'config/config.json');
    const tokens = path.join(t().root, 'config/lmstfy_tokens.json');
    fs.writeFileSync(tokens, '{"tokens": {}, "revoked": {}}\n');
    fs.chmodSync(config, 0o644);
    fs.chmodSync(tokens, 0o640);
    await t().usePort();
    expect((await t().bin('rq-mgr', ['start'])).code).toBe(0);
    expect(modeOf(config).toString(8)).toBe('600');
    expect(modeOf(tokens).toString(8)).toBe('600');
    const log = fs.readFileSync(path.join(t().root, 'log/rq.log'), 'utf8');
    expect(log).toContain('config/config.json was readable by other users (mode 0644); its mode is now 0600');
    expect(log).toContain('config/lmstfy_tokens.json was readable by other users (mode 0640); its mode is now 0600');

    // Once owner-only, a later start says nothing.
    expect((await t().bin('rq-mgr', ['stop'])).code).toBe(0);
    fs.rmSync(path.join(t().root, 'log/rq.log'));
    expect((await t().bin('rq-mgr', ['start'])).code).toBe(0);
    expect(fs.readFileSync(path.join(t().root, 'log/rq.log'), 'utf8')).not.toContain('readable by other users');
  });

  it('creates rq-mgr’s and the queues’ sockets 0600 even under umask 000', async () => {
    t().addQueue({ name: 'sockq', script: 'done.sh' });
    await t().usePort();
    const start = await runBin('/bin/sh', ['-c', `umask 000 && exec "${REPO}/bin/rq-mgr" start`], { RQ_ROOT: t().root, RQ_FATAL_DELAY_MS: '0' });
    expect(start.code, start.stderr).toBe(0);
    const sockets = ['config/queuemgr.sock', 'queues/sockq/queue.sock'].map((s) => path.join(t().root, s));
    await waitFor(() => sockets.every((s) => fs.existsSync(s)), 10_000, 'the sockets');
    for (const s of sockets) expect(modeOf(s).toString(8), s).toBe('600');
    expect(await t().mgr('ping')).toEqual(['pong']);
    expect(await t().rpc('sockq', 'ping', '')).toEqual(['pong']);
  });
});
