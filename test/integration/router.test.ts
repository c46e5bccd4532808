/**
 * The router end to end (docs/router.md): a real install (bin/rq-install's rq_router and
 * relay queues, libexec/rq_router_script), a rules file in config/, real queue processes,
 * and what an operator sees: each rule's action (done, err, balance and relay through
 * `dup` into the local relay queue, which is paused so the copies wait there), the
 * router log, a conditional action and a delay, dup failures, a message without a dest,
 * and a missing or invalid rules file taking the rq_router queue DOWN (one message ends
 * in err, the others wait) until the file is fixed and the flag removed.
 */
import fs from 'node:fs';
import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { installBuiltins, setEnvVars } from '../helpers/builtin-queues.js';
import { TestRoot, shortId, useTestRoot, waitFor } from '../helpers/install.js';

const root = useTestRoot();
let t: TestRoot;
let rulesFile: string;
beforeEach(async () => {
  t = root();
  await installBuiltins(t);
  rulesFile = path.join(t.root, 'config/rq_router_rules.json');
});

function writeRules(rules: unknown): void {
  fs.writeFileSync(rulesFile, JSON.stringify(rules));
}

/** Start the relay queue paused (copies wait in its que) and the router. */
async function startRouter(): Promise<void> {
  fs.writeFileSync(path.join(t.root, 'config/relay.pause'), '');
  await t.start('relay');
  await t.start('rq_router');
}

async function route(msg: Record<string, unknown>, state: 'done' | 'err'): Promise<{ id: string; status: string }> {
  const id = await t.send('rq_router', msg);
  return { id, status: await t.waitState('rq_router', id, state) };
}

async function stdioLog(id: string): Promise<string> {
  const msg = await t.message('rq_router', id);
  return fs.readFileSync(path.join(t.root, msg['path'] as string, 'job/stdio.log'), 'utf8');
}

function routerLog(): string[] {
  return fs.readFileSync(path.join(t.root, 'log/rq_router.log'), 'utf8').split('\n').slice(0, -1);
}

/** A message the router put into the relay queue, by the full id it reported. */
function relayed(fullId: string): Promise<Record<string, unknown>> {
  expect(fullId).toMatch(/^http:\/\/127\.0\.0\.1:3333\/q\/relay\/\d{8}\.\d{4}\.\d\d\.\d{3}\.\d+$/);
  return t.message('relay', shortId(fullId));
}

const LOG_LINE = (rule: string, action: string, id: string, src: string): RegExp =>
  new RegExp(`^\\d+ - \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d [+-]\\d{4} - ${rule} - ${action} - ${id.replaceAll('.', '\\.')} - ${src}$`);

describe('actions', () => {
  it('done: the message is done, and a logging rule writes log/rq_router.log', async () => {
    writeRules([{ name: 'finished', action: 'done', dest: '^fin_', log: true }]);
    await startRouter();
    const r = await route({ dest: 'fin_x', src: 'web1' }, 'done');
    expect(r.status).toBe('done - router processed a done');
    expect(routerLog()).toHaveLength(1);
    expect(routerLog()[0]).toMatch(LOG_LINE('finished', 'done', r.id, 'web1'));
  });

  it('err: always logged; a message no rule matches takes the built-in default, err', async () => {
    writeRules([{ name: 'refuse', action: 'err', src: '^bad', log: false }]);
    await startRouter();
    const refused = await route({ dest: 'q1', src: 'bad-sender' }, 'err');
    expect(refused.status).toBe('err - router processed an err');
    const unmatched = await route({ dest: 'q1' }, 'err');
    expect(unmatched.status).toBe('err - router processed an err');
    expect(routerLog()[0]).toMatch(LOG_LINE('refuse', 'err', refused.id, 'bad-sender'));
    expect(routerLog()[1]).toMatch(LOG_LINE('default', 'err', unmatched.id, ''));
  });

  it('balance: one copy, for one host of the route, waits in the relay queue', async () => {
    writeRules([{ name: 'spread', action: 'balance', dest: 'stats$', route: ['stats1.example.com:4000', 'stats2.example.com'] }]);
    await startRouter();
    const r = await route({ dest: 'http://old.example.com:3333/q/stats', src: 'web1', param1: 'p1' }, 'done');
    expect(r.status).toMatch(/^done - DUP to /);
    const copy = await relayed(r.status.slice('done - DUP to '.length));
    expect(['http://stats1.example.com:4000/q/stats', 'http://stats2.example.com:3333/q/stats']).toContain(copy['dest']);
    expect(copy).toMatchObject({ src: 'web1', param1: 'p1', count: 0, orig_msg_id: `http://127.0.0.1:3333/q/rq_router/${r.id}`, state: 'que' });
    expect(fs.existsSync(path.join(t.root, 'log/rq_router.log'))).toBe(false);
  });

  it('relay: one copy per host (one of each group), each reported, then done', async () => {
    writeRules([
      {
        name: 'fan out',
        action: 'relay',
        dest: '^box_',
        route: [['a1.example.com', 'a2.example.com'], ['http://b.example.com:5000/q/elsewhere']],
      },
    ]);
    await startRouter();
    const r = await route({ dest: 'box_que' }, 'done');
    expect(r.status).toBe('done - done relay of 2 messages');
    const reported = [...(await stdioLog(r.id)).matchAll(/ - run DUP relay to (\S+)\n/g)].map((m) => m[1]!);
    expect(reported).toHaveLength(2);
    const dests = await Promise.all(reported.map(async (id) => (await relayed(id))['dest']));
    expect(['http://a1.example.com:3333/q/box_que', 'http://a2.example.com:3333/q/box_que']).toContain(dests[0]);
    expect(dests[1]).toBe('http://b.example.com:5000/q/elsewhere');
  });

  it('a refused dup ends the message in err with the queue’s reason', async () => {
    writeRules([
      { name: 'one', action: 'balance', dest: '^one$', route: ['h1'] },
      { name: 'all', action: 'relay', dest: '^all$', route: ['h1', 'h2'] },
    ]);
    fs.writeFileSync(path.join(t.root, 'config/relay.down'), '');
    await startRouter();
    expect((await route({ dest: 'one' }, 'err')).status).toBe('err - DUP failed - dup failed - status: DOWN');
    expect((await route({ dest: 'all' }, 'err')).status).toBe('err - DUP relay failed - dup failed - status: DOWN');
  });

  it('a message without a dest ends in err instead of being sent to /q/', async () => {
    writeRules([{ name: 'spread', action: 'balance', src: '^web', route: ['h1'] }]);
    await startRouter();
    expect((await route({ dest: '', src: 'web1' }, 'err')).status).toBe('err - message has no dest to route');
    expect((await route({ dest: null, src: 'web2' }, 'err')).status).toBe('err - message has no dest to route');
    expect(await t.rpc('relay', 'num_messages', '')).toMatchObject({ prep: 0, que: 0 });
  });

  it('resolves a conditional action from the rq_router queue’s environment, and waits the delay first', async () => {
    writeRules([{ name: 'prod only', action: { env: 'ROUTE_MODE', equals: 'prod', then: 'err', else: 'done' }, dest: 'x', delay: 1 }]);
    setEnvVars(t, 'rq_router', { ROUTE_MODE: 'prod' });
    await startRouter();
    const r = await route({ dest: 'x' }, 'err');
    expect(r.status).toBe('err - router processed an err');
    expect(await stdioLog(r.id)).toContain(' - run router delay 1 seconds\n');
  });
});

describe('a bad rules file', () => {
  const downFlag = (): string => path.join(t.root, 'config/rq_router.down');

  /** The status of a message in err, from its file (a DOWN queue answers no message RPC). */
  function errStatus(id: string): unknown {
    return JSON.parse(fs.readFileSync(path.join(t.queueDir('rq_router'), 'err', id, 'status'), 'utf8'));
  }

  /** Route one message into a broken router: it ends in err and the queue goes DOWN. */
  async function breakRouter(): Promise<string> {
    await startRouter();
    const id = await t.send('rq_router', { dest: 'q1' });
    await waitFor(async () => JSON.stringify(await t.rpc('rq_router', 'status', '')) === '["DOWN"]', 10_000, 'rq_router to go DOWN');
    await waitFor(async () => JSON.stringify(await t.rpc('rq_router', 'messages', { state: 'err' })).includes(id), 10_000, 'the message to reach err');
    expect(errStatus(id)).toEqual({ job_status: `Bad rule file at: ${rulesFile}` });
    expect(await t.rpc('rq_router', 'create_message', { dest: 'q1' })).toEqual(['fail', 'status: DOWN', 'RQ_QUEUE_DOWN']);
    return id;
  }

  it('a missing file takes the rq_router queue DOWN, saying why in config/rq_router.down', async () => {
    await breakRouter();
    const text = fs.readFileSync(downFlag(), 'utf8');
    expect(text).toMatch(/^bad rules file\n/);
    expect(text).toContain(`\n${rulesFile}: cannot read the rules file: ENOENT: no such file or directory, open '${rulesFile}'\n\n`);
    expect(text).toContain(`bin/rq verify_rules --path ${rulesFile}`);
  });

  it('says so when RQ’s Ruby rules are there instead', async () => {
    const ruby = path.join(t.root, 'config/rq_router_rules.rb');
    fs.writeFileSync(ruby, 'rule "default"\naction :err\n\n');
    await breakRouter();
    expect(fs.readFileSync(downFlag(), 'utf8')).toContain(
      `\n${ruby} is ignored, so this host is not in router mode: RQ's Ruby rules are not read; rq's rules are JSON in config/rq_router_rules.json (docs/router.md)\n`,
    );
  });

  it('an invalid file does too; fixed, with the flag removed, the queue routes again', async () => {
    writeRules([{ name: 'typo', action: 'drop', dest: 'q1' }]);
    const broken = await breakRouter();
    expect(fs.readFileSync(downFlag(), 'utf8')).toContain(`${rulesFile}: rule 1 ("typo"): "action" must be one of relay, balance, done, err`);

    writeRules([{ name: 'typo', action: 'done', dest: 'q1' }]);
    fs.rmSync(downFlag());
    await waitFor(async () => JSON.stringify(await t.rpc('rq_router', 'status', '')) === '["UP"]', 10_000, 'rq_router to come UP');
    expect(await t.statusOf('rq_router', broken)).toBe(`err - Bad rule file at: ${rulesFile}`);
    expect((await route({ dest: 'q1' }, 'done')).status).toBe('done - router processed a done');
  });

  it('with several messages waiting, exactly one ends in err and the others stay in que', async () => {
    writeRules([{ name: 'typo', action: 'drop', dest: 'q1' }]);
    const pauseFlag = path.join(t.root, 'config/rq_router.pause');
    fs.writeFileSync(pauseFlag, '');
    await startRouter();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push(await t.send('rq_router', { dest: 'q1' }));
    fs.rmSync(pauseFlag);
    // Only `num_messages` from here on: `status` and `stats` re-read the flag files, which
    // would stop the queue after the fact and hide a second message started meanwhile.
    const counts = async (): Promise<unknown> => t.rpc('rq_router', 'num_messages', '');
    await waitFor(async () => ((await counts()) as { err: number }).err > 0, 10_000, 'a message to reach err');
    expect(await counts()).toEqual({ prep: 0, que: 4, run: 0, done: 0, relayed: 0, err: 1 });
    expect(fs.existsSync(downFlag())).toBe(true);
    const [failed] = (await t.rpc('rq_router', 'messages', { state: 'err' })) as { msg_id: string }[];
    expect(ids).toContain(failed!.msg_id);
    expect(errStatus(failed!.msg_id)).toEqual({ job_status: `Bad rule file at: ${rulesFile}` });

    // Fixed, with the flag removed, the waiting messages are routed.
    writeRules([{ name: 'typo', action: 'done', dest: 'q1' }]);
    fs.rmSync(downFlag());
    for (const id of ids.filter((i) => i !== failed!.msg_id)) await t.waitState('rq_router', id, 'done');
  });
});
