/**
 * Running rq as a service: bin/rc.rq (the LSB init script, docs/operations.md) run for real
 * against a stand-in bin/rq-mgr that records how it was called, and the settings of
 * bin/rq.service (the systemd unit) that matter for RQ's behaviour.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO, runBin, useScratchDir } from '../helpers/ops-tools.js';

const scratch = useScratchDir('rq-service-test-');
const ME = os.userInfo().username;
const IS_ROOT = process.getuid?.() === 0;
/**
 * The open-files limit start must give rq-mgr: at least 10240. Those tests are skipped
 * when the hard limit here is lower, since raising it needs CAP_SYS_RESOURCE (which root
 * in a container may lack).
 */
const hardLimit = execFileSync('bash', ['-c', 'ulimit -Hn'], { encoding: 'utf8' }).trim();
const CAN_RAISE = hardLimit === 'unlimited' || Number(hardLimit) >= 10240;
const NEEDS_LIMIT = '(skipped where the hard open-files limit is below 10240)';

function expectEnoughFiles(stdout: string): void {
  const nofile = /nofile=(\S+)/.exec(stdout)?.[1] ?? '';
  expect(nofile === 'unlimited' || Number(nofile) >= 10240, `nofile=${nofile}`).toBe(true);
}

/**
 * An install root whose bin/rq-mgr prints its argument, cwd, user and open-files limit,
 * and exits with the status given in $FAKE_STATUS (for `status`).
 */
function fakeInstall(): string {
  const home = scratch();
  fs.mkdirSync(path.join(home, 'bin'));
  fs.writeFileSync(
    path.join(home, 'bin/rq-mgr'),
    '#!/bin/bash\necho "rq-mgr $* cwd=$(pwd) user=$(id -un) nofile=$(ulimit -n)"\nexit "${FAKE_STATUS:-0}"\n',
    { mode: 0o755 },
  );
  return home;
}

function rcRq(args: string[], env: Record<string, string | undefined>) {
  return runBin('bin/rc.rq', args, env);
}

describe('bin/rc.rq', () => {
  it('is valid bash with the LSB header', () => {
    execFileSync('bash', ['-n', path.join(REPO, 'bin/rc.rq')]);
    const text = fs.readFileSync(path.join(REPO, 'bin/rc.rq'), 'utf8');
    const header = /### BEGIN INIT INFO\n([\s\S]*?)### END INIT INFO/.exec(text)?.[1] ?? '';
    expect(header).toMatch(/^# Provides:\s+rq$/m);
    expect(header).toMatch(/^# Required-Start:\s+\$remote_fs \$network$/m);
    expect(header).toMatch(/^# Required-Stop:\s+\$remote_fs \$network$/m);
    expect(header).toMatch(/^# Default-Start:\s+2 3 4 5$/m);
    expect(header).toMatch(/^# Default-Stop:\s+0 1 6$/m);
    expect(header).toMatch(/^# Short-Description:\s+\S/m);
    fs.accessSync(path.join(REPO, 'bin/rc.rq'), fs.constants.X_OK);
  });

  it.each([[['bogus']], [[]]])('%j prints the usage and exits 2 (LSB: invalid arguments)', async (args) => {
    const r = await rcRq(args, { RQ_HOME: fakeInstall() });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^Usage: .*rc\.rq \{start\|stop\|restart\|reload\|force-reload\|status\}\n$/);
    expect(r.stdout).toBe('');
  });

  it('start refuses with exit 5 (not installed) when RQ_HOME has no bin/rq-mgr', async () => {
    const r = await rcRq(['start'], { RQ_HOME: '/nonexistent' });
    expect(r.code).toBe(5);
    expect(r.stderr).toContain('/nonexistent/bin/rq-mgr is missing');
    expect((await rcRq(['stop'], { RQ_HOME: '/nonexistent' })).code).toBe(5);
    expect((await rcRq(['status'], { RQ_HOME: '/nonexistent' })).code).toBe(4);
  });

  it('start runs bin/rq-mgr start from RQ_HOME', async () => {
    const home = fakeInstall();
    const r = await rcRq(['start'], { RQ_HOME: home, RQ_USER: ME });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`^rq-mgr start cwd=${home} user=${ME} nofile=\\S+\n$`));
  });

  it.skipIf(!CAN_RAISE)(`start and restart give rq-mgr at least 10240 open files ${NEEDS_LIMIT}`, async () => {
    const env = { RQ_HOME: fakeInstall(), RQ_USER: ME };
    expectEnoughFiles((await rcRq(['start'], env)).stdout);
    expectEnoughFiles((await rcRq(['restart'], env)).stdout.split('\n')[1] ?? '');
  });

  it('stop, reload, force-reload and restart call rq-mgr in turn', async () => {
    const home = fakeInstall();
    const env = { RQ_HOME: home, RQ_USER: ME };
    const line = (cmd: string): string => `rq-mgr ${cmd} cwd=${home} user=${ME} nofile=`;
    expect((await rcRq(['stop'], env)).stdout).toContain(line('stop'));
    expect((await rcRq(['reload'], env)).stdout).toContain(line('reload'));
    expect((await rcRq(['force-reload'], env)).stdout).toContain(line('reload'));
    const restart = (await rcRq(['restart'], env)).stdout.split('\n');
    expect(restart[0]).toContain(line('stop'));
    expect(restart[1]).toContain(line('start'));
  });

  it.each([[0], [3]])('status passes on rq-mgr status\'s exit %i', async (status) => {
    const r = await rcRq(['status'], { RQ_HOME: fakeInstall(), RQ_USER: ME, FAKE_STATUS: String(status) });
    expect(r.code).toBe(status);
    expect(r.stdout).toMatch(/^rq-mgr status /);
  });

  it.runIf(IS_ROOT)('as root, runs rq-mgr as RQ_USER with runuser', async () => {
    const home = fakeInstall();
    fs.chmodSync(home, 0o755);
    const r = await rcRq(['start'], { RQ_HOME: home, RQ_USER: 'nobody' });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`^rq-mgr start cwd=${home} user=nobody nofile=\\S+\n$`));
  });

  it.runIf(IS_ROOT && CAN_RAISE)(`as root, raises the open-files limit again after runuser ${NEEDS_LIMIT}`, async () => {
    const home = fakeInstall();
    fs.chmodSync(home, 0o755);
    // runuser's PAM session resets the soft limit; rc.rq raises it again on that side.
    expectEnoughFiles((await rcRq(['start'], { RQ_HOME: home, RQ_USER: 'nobody' })).stdout);
  });
});

describe('bin/rq.service', () => {
  const unit = fs.readFileSync(path.join(REPO, 'bin/rq.service'), 'utf8');
  const settings = new Map(
    unit
      .split('\n')
      .filter((l) => /^\w+=/.test(l))
      .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)] as const),
  );

  it('runs rq-mgr in the foreground as user rq from /opt/rq', () => {
    expect(Object.fromEntries(settings)).toMatchObject({
      Type: 'simple',
      ExecStart: '/opt/rq/bin/rq-mgr run',
      ExecReload: '/bin/kill -HUP $MAINPID',
      User: 'rq',
      WorkingDirectory: '/opt/rq',
      Restart: 'on-failure',
      LimitNOFILE: '10240',
      WantedBy: 'multi-user.target',
    });
  });

  it('stops rq-mgr alone (KillMode=process), so running queue scripts survive, and says why', () => {
    expect(settings.get('KillMode')).toBe('process');
    expect(unit).toMatch(/# KillMode=process:[^\n]*\n(#[^\n]*\n)*KillMode=process/);
  });
});
