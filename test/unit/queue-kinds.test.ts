/**
 * Queue kinds as the dashboard tells them (web/queue-kinds.ts): from a queue's name and
 * config.json, and remembered per config file (a changed file is read again).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { rootLayout } from '../../src/store/layout.js';
import { QueueKinds, kindOf } from '../../src/web/queue-kinds.js';

const config = (o: Record<string, unknown>): string => JSON.stringify({ num_workers: 0, ...o });

describe('queue kinds', () => {
  it('tells built-in, script and pull queues apart, with the door and the group', () => {
    expect(kindOf('relay', config({ script: '' }))).toMatchObject({ kind: 'builtin', door: null, group: 'built-in' });
    expect(kindOf('mail', config({ script: 'bin/mail.sh' }))).toMatchObject({ kind: 'script', door: null, group: 'script queues' });
    expect(kindOf('gone', undefined)).toMatchObject({ kind: 'script' });
    expect(kindOf('byhand', config({ script: '' }))).toMatchObject({ kind: 'pull', door: null, group: 'pull queues' });
    expect(kindOf('ns.jobs', config({ script: '', door: 'lmstfy' }))).toMatchObject({ kind: 'pull', door: 'lmstfy', group: 'lmstfy namespace ns' });
    expect(kindOf('orders', config({ script: '', door: 'cloudq' }))).toMatchObject({ kind: 'pull', door: 'cloudq', group: 'cloudq queues' });
    expect(kindOf('odd', config({ script: '', door: 'ftp' }))).toMatchObject({ kind: 'pull', door: null });
  });

  it('orders the groups: script queues, pull queues by door and namespace, built-in last', () => {
    const orders = [
      kindOf('relay', undefined),
      kindOf('b.q', config({ script: '', door: 'lmstfy' })),
      kindOf('a.q', config({ script: '', door: 'lmstfy' })),
      kindOf('w', config({ script: '', door: 'workq' })),
      kindOf('s', config({ script: 'x.sh' })),
    ].map((k) => k.order);
    expect([...orders].sort().map((o) => orders.indexOf(o))).toEqual([4, 2, 1, 3, 0]);
  });

  describe('remembered per config file', () => {
    let dir = '';
    afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

    it('reads a config again when it changed, and forgets queues no longer listed', () => {
      dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rq-kinds-'));
      const file = path.join(dir, 'queues', 'jobs', 'config.json');
      fs.mkdirSync(path.dirname(file), { recursive: true });
      fs.writeFileSync(file, config({ name: 'jobs', script: '' }));
      const kinds = new QueueKinds(rootLayout(dir));
      expect(kinds.of(['jobs']).get('jobs')).toMatchObject({ kind: 'pull' });
      fs.writeFileSync(file, config({ name: 'jobs', script: 'run-the-jobs.sh' }));
      expect(kinds.one('jobs')).toMatchObject({ kind: 'script' });
      expect(kinds.of([]).size).toBe(0);
    });
  });
});
