// A queue's config.json (docs/configuration.md): the normalisation applied at every load,
// the file-naming errors of the parser, and the exact form written at creation.
import { describe, expect, it } from 'vitest';
import { RqError } from '../../src/domain/errors.js';
import { CLEANER_DEFAULTS } from '../../src/domain/retention.js';
import {
  normaliseQueueConfig,
  parseQueueConfig,
  serialiseQueueConfig,
  type QueueConfig,
} from '../../src/domain/queue-config.js';

const BASE = { name: 'test', script: './test/test_script.sh' };

describe('normaliseQueueConfig', () => {
  it('fills every absent key with RQ\'s default', () => {
    expect(normaliseQueueConfig(BASE)).toEqual({
      name: 'test',
      script: './test/test_script.sh',
      num_workers: 0,
      exec_prefix: null,
      env_vars: {},
      coalesce_params: [],
      blocking_params: [],
      schedule: [],
      timeout: null,
      // Beyond RQ (retention.ts): RQ's cleaner kept done and relayed 2 days.
      cleaner: CLEANER_DEFAULTS,
      door: null,
    });
  });

  it.each<[unknown, number]>([
    [1, 1],
    ['1', 1],
    ['3 workers', 3],
    ['x', 0],
    [2.9, 2],
    [null, 0],
  ])('num_workers %j → %d', (num_workers, expected) => {
    expect(normaliseQueueConfig({ ...BASE, num_workers }).num_workers).toBe(expected);
  });

  it('keeps exec_prefix strings, the empty one included, and null otherwise', () => {
    expect(normaliseQueueConfig({ ...BASE, exec_prefix: '' }).exec_prefix).toBe('');
    expect(normaliseQueueConfig({ ...BASE, exec_prefix: 'nice -n 5' }).exec_prefix).toBe('nice -n 5');
    expect(normaliseQueueConfig({ ...BASE, exec_prefix: null }).exec_prefix).toBeNull();
    expect(normaliseQueueConfig({ ...BASE, exec_prefix: 5 }).exec_prefix).toBeNull();
  });

  it('keeps env_vars when it is an object, else {}', () => {
    const env = { RQTESTENV1: 'OWEN', RQTESTENV2: '32' };
    expect(normaliseQueueConfig({ ...BASE, env_vars: env }).env_vars).toEqual(env);
    expect(normaliseQueueConfig({ ...BASE, env_vars: ['A=1'] }).env_vars).toEqual({});
    expect(normaliseQueueConfig({ ...BASE, env_vars: 'A=1' }).env_vars).toEqual({});
  });

  it('turns coalesce_params and blocking_params into integers', () => {
    const c = normaliseQueueConfig({ ...BASE, coalesce_params: ['1', 2, '4'], blocking_params: ['1'] });
    expect(c.coalesce_params).toEqual([1, 2, 4]);
    expect(c.blocking_params).toEqual([1]);
  });

  it('treats a non-array param list as empty', () => {
    const c = normaliseQueueConfig({ ...BASE, coalesce_params: '1', blocking_params: { a: 1 } });
    expect(c.coalesce_params).toEqual([]);
    expect(c.blocking_params).toEqual([]);
  });

  it.each<[unknown]>([[true], ['true'], ['yes'], ['1'], [1]])(
    'legacy coalesce %j picks the truthy coalesce_paramN and wins over coalesce_params',
    (truthy) => {
      const c = normaliseQueueConfig({
        ...BASE,
        coalesce: truthy,
        coalesce_param1: 'yes',
        coalesce_param2: false,
        coalesce_param3: 1,
        coalesce_param4: 'no',
        coalesce_params: [2],
      });
      expect(c.coalesce_params).toEqual([1, 3]);
    },
  );

  it('accepts every truthy spelling for coalesce_paramN and nothing else', () => {
    const c = normaliseQueueConfig({
      ...BASE,
      coalesce: 'true',
      coalesce_param1: true,
      coalesce_param2: 'true',
      coalesce_param3: '1',
      coalesce_param4: 'TRUE',
    });
    expect(c.coalesce_params).toEqual([1, 2, 3]);
  });

  it.each<[unknown]>([[false], ['false'], ['no'], [0], ['0'], [null], ['True']])(
    'legacy coalesce %j is off, so coalesce_params stands',
    (falsy) => {
      const c = normaliseQueueConfig({ ...BASE, coalesce: falsy, coalesce_param1: true, coalesce_params: ['2'] });
      expect(c.coalesce_params).toEqual([2]);
    },
  );

  it('gives an empty list when legacy coalesce is on but no param is', () => {
    expect(normaliseQueueConfig({ ...BASE, coalesce: true, coalesce_params: [1] }).coalesce_params).toEqual([]);
  });

  it('reads schedule params at the top level of an entry; missing ones become null', () => {
    const c = normaliseQueueConfig({
      ...BASE,
      schedule: [
        { cron: '*/5 * * * *', param1: 'a', param3: 3 },
        { cron: '@hourly' },
      ],
    });
    expect(c.schedule).toEqual([
      { cron: '*/5 * * * *', params: { param1: 'a', param2: null, param3: 3, param4: null }, missed: 'skip' },
      { cron: '@hourly', params: { param1: null, param2: null, param3: null, param4: null }, missed: 'skip' },
    ]);
  });

  it('also reads params nested under "params", the form RQ writes (RQ\'s loader lost them)', () => {
    const c = normaliseQueueConfig({ ...BASE, schedule: [{ cron: '@daily', params: { param1: 'x', param2: 'y' }, param2: 'top' }] });
    expect(c.schedule).toEqual([{ cron: '@daily', params: { param1: 'x', param2: 'top', param3: null, param4: null }, missed: 'skip' }]);
  });

  it('keeps the missed policy, and writes it only when it is not the default', () => {
    const c = normaliseQueueConfig({ ...BASE, schedule: [{ cron: '@daily', missed: 'once' }, { cron: '@hourly' }] });
    expect(c.schedule.map((e) => e.missed)).toEqual(['once', 'skip']);
    expect(serialiseQueueConfig(c)).toContain('"schedule":[{"cron":"@daily","params":{"param1":null,"param2":null,"param3":null,"param4":null},"missed":"once"},{"cron":"@hourly","params"');
  });

  it('skips schedule entries without a cron string', () => {
    const c = normaliseQueueConfig({ ...BASE, schedule: [{ param1: 'a' }, 'x', null, { cron: 5 }, { cron: '@daily' }] });
    expect(c.schedule.map((s) => s.cron)).toEqual(['@daily']);
  });

  it('returns a frozen value', () => {
    expect(Object.isFrozen(normaliseQueueConfig(BASE))).toBe(true);
  });

  it('keeps a positive timeout and ignores anything else', () => {
    expect(normaliseQueueConfig({ ...BASE, timeout: 2.5 }).timeout).toBe(2.5);
    expect(normaliseQueueConfig({ ...BASE, timeout: 0 }).timeout).toBeNull();
    expect(normaliseQueueConfig({ ...BASE, timeout: '30' }).timeout).toBeNull();
  });
});

describe('parseQueueConfig', () => {
  const PATH = '/root/queue/test/config.json';

  function errorOf(fn: () => unknown): RqError {
    try {
      fn();
    } catch (e) {
      if (e instanceof RqError) return e;
      throw e;
    }
    throw new Error('expected an RqError');
  }

  it('parses and normalises JSON text', () => {
    const c = parseQueueConfig('{"name":"test","script":"s.sh","num_workers":"1","coalesce_params":["1"]}', PATH);
    expect(c.num_workers).toBe(1);
    expect(c.coalesce_params).toEqual([1]);
  });

  it('names the file when the text is not JSON', () => {
    const e = errorOf(() => parseQueueConfig('{"name":', PATH));
    expect(e.code).toBe('RQ_CONFIG');
    expect(e.message.startsWith(`could not read queue config [ ${PATH} ]: `)).toBe(true);
  });

  it.each([['[]'], ['"x"'], ['null'], ['3']])('names the file when the JSON %s is not an object', (text) => {
    const e = errorOf(() => parseQueueConfig(text, PATH));
    expect(e.code).toBe('RQ_CONFIG');
    expect(e.message).toContain(PATH);
  });

  it.each<[unknown]>([[0], [-1], ['30'], [true], [{}]])('refuses timeout %j, naming the file and the value', (timeout) => {
    const e = errorOf(() => parseQueueConfig(JSON.stringify({ ...BASE, timeout }), PATH));
    expect(e.code).toBe('RQ_CONFIG');
    expect(e.message).toContain(PATH);
    expect(e.message).toContain('timeout');
    expect(e.message).toContain(JSON.stringify(timeout));
  });

  it('accepts a positive timeout and a null one', () => {
    expect(parseQueueConfig(JSON.stringify({ ...BASE, timeout: 30 }), PATH).timeout).toBe(30);
    expect(parseQueueConfig(JSON.stringify({ ...BASE, timeout: null }), PATH).timeout).toBeNull();
  });
});

describe('serialiseQueueConfig', () => {
  it('writes the compact form with RQ\'s exact key order', () => {
    const c = normaliseQueueConfig({
      env_vars: {},
      exec_prefix: '',
      num_workers: '1',
      script: './test/test_script.sh',
      name: 'test',
    });
    expect(serialiseQueueConfig(c)).toBe(
      '{"name":"test","script":"./test/test_script.sh","num_workers":1,"exec_prefix":"","env_vars":{},"coalesce_params":[],"blocking_params":[],"schedule":[]}',
    );
  });

  it('writes schedule entries as cron plus params', () => {
    const c = normaliseQueueConfig({ ...BASE, exec_prefix: '', schedule: [{ cron: '@daily', param2: 'b' }] });
    expect(serialiseQueueConfig(c)).toContain(
      '"schedule":[{"cron":"@daily","params":{"param1":null,"param2":"b","param3":null,"param4":null}}]',
    );
  });

  it('adds timeout at the end only when set', () => {
    const c = normaliseQueueConfig({ ...BASE, exec_prefix: '', timeout: 30 });
    expect(serialiseQueueConfig(c).endsWith(',"schedule":[],"timeout":30}')).toBe(true);
    expect(serialiseQueueConfig(normaliseQueueConfig(BASE))).not.toContain('timeout');
  });

  it('survives a reload with the same meaning', () => {
    const configs: QueueConfig[] = [
      normaliseQueueConfig({ ...BASE, num_workers: 2, exec_prefix: '', coalesce_params: [1], blocking_params: [2, 3] }),
      normaliseQueueConfig({ ...BASE, num_workers: 1, env_vars: { A: 'b' } }),
      normaliseQueueConfig({ ...BASE, num_workers: 1, exec_prefix: 'nice', timeout: 5 }),
    ];
    for (const c of configs) {
      expect(parseQueueConfig(serialiseQueueConfig(c), 'x')).toEqual(c);
    }
  });

  it('writes the door of a pull queue at the end, keeps it through a reload, and drops one that is no door', () => {
    const text = serialiseQueueConfig(normaliseQueueConfig({ name: 'ns.q', script: '', num_workers: 0, door: 'lmstfy' }));
    expect(text.endsWith(',"schedule":[],"door":"lmstfy"}')).toBe(true);
    expect(parseQueueConfig(text, 'x').door).toBe('lmstfy');
    expect(normaliseQueueConfig({ ...BASE, door: 'ftp' }).door).toBeNull();
    expect(serialiseQueueConfig(normaliseQueueConfig(BASE))).not.toContain('door');
  });

  it('keeps a null exec_prefix null, so the default bash -lc survives a reload', () => {
    const text = serialiseQueueConfig(normaliseQueueConfig({ ...BASE, num_workers: 1 }));
    expect(text).toContain('"exec_prefix":null');
    expect(parseQueueConfig(text, 'x').exec_prefix).toBeNull();
  });
});
