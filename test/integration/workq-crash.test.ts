/**
 * A Workq crash test like Workq's own: clients add one job under each of NAMES names
 * (`ping1` … `ping<NAMES>`), each with a TTL of TTL_MS, and the canaries, each under a
 * name of its own: a job completed, one failed, one leased, one deleted, one scheduled,
 * and one leased with max-attempts 1 and a TTR of 1 ms (so it failed). As the last acts,
 * two jobs are leased with a TTR, and one added with a TTL, that run out while rq is
 * down. Then rq-mgr and every process under it are killed with SIGKILL at once
 * (helpers/crash.ts) and rq-mgr is started again. Every job answers `inspect job` and
 * `result` as it did before the crash, and every name `inspect queue`, `jobs`,
 * `scheduled-jobs` and `queues`; the ids are still held; the last leases have ended (one
 * job failed, one is back in its queue) and the short TTL has removed its job. Once the
 * TTL has passed, every job but the scheduled one (whose TTL counts from its time) is
 * gone, the unfinished ones counted as evicted, and their ids are free.
 */
import { randomUUID } from 'node:crypto';
import { expect, it } from 'vitest';
import { crashInstall } from '../helpers/crash.js';
import { useTestRoot, waitFor } from '../helpers/install.js';
import { startProtocols } from '../helpers/protocols.js';
import { NOT_FOUND, OK, TIMEOUT, WorkqClient, clientError, type Reply } from '../helpers/workq-client.js';

/** The names, one job each, as in Workq's own test (each is a queue: hosted together). */
const NAMES = 1_000;
/**
 * The TTL of every job: 5 s in Workq's own test. Here it must outlast the adds, the
 * checks before the crash, the restart and the checks after it (the test says so when it
 * does not): with 1,000 names that takes about 40 s on a 2-core machine, most of it
 * making a queue (a directory, its config, fsynced) for each new name.
 */
const TTL_MS = 60_000;
/** A TTR that does not run out during the test. */
const LONG_TTR_MS = 3_600_000;
/** Connections adding the jobs at once. */
const CLIENTS = 8;
/** `inspect queues` pages of this many names (its largest limit). */
const PAGE = 100;

const root = useTestRoot();

/** What a job answers: `inspect job <id>` and `result <id> 0`, as sent. */
interface Answers {
  inspect: string;
  result: string;
}

async function answersOf(c: WorkqClient, id: string): Promise<Answers> {
  return { inspect: (await c.inspect('job', id)).text, result: (await c.result(id, 0)).text };
}

/** What a name answers: `inspect queue`, `inspect jobs` and `inspect scheduled-jobs`, as sent. */
async function queueOf(c: WorkqClient, name: string): Promise<string[]> {
  return [(await c.inspect('queue', name)).text, (await c.inspect('jobs', name, 0, PAGE)).text, (await c.inspect('scheduled-jobs', name, 0, PAGE)).text];
}

/** `inspect queues`, every page: each name's record, as sent. */
async function allQueues(c: WorkqClient): Promise<Map<string, string>> {
  const records = new Map<string, string>();
  for (let offset = 0; ; offset += PAGE) {
    const r = await c.inspect('queues', offset, PAGE);
    if (r.type !== 'records') throw new Error(`expected inspect records, got ${JSON.stringify(r.text)}`);
    for (const { label, keys, values } of r.records) records.set(label, keys.map((k) => `${k} ${values[k]}`).join('\n'));
    if (r.records.length < PAGE) return records;
  }
}

function leased(r: Reply): { id: string; payload: string } {
  if (r.type !== 'lease') throw new Error(`expected a lease reply, got ${JSON.stringify(r.text)}`);
  return { id: r.job.id, payload: r.job.payload.toString() };
}

/** A job's `inspect job` keys, or undefined for -NOT-FOUND. */
async function keysOf(c: WorkqClient, id: string): Promise<Record<string, string> | undefined> {
  const r = await c.inspect('job', id);
  if (r.type === 'not-found') return undefined;
  if (r.type !== 'records') throw new Error(`expected inspect records, got ${JSON.stringify(r.text)}`);
  return r.records[0]!.values;
}

const resultText = (id: string, success: boolean, result: string): string => `+OK 1\r\n${id} ${success ? 1 : 0} ${Buffer.byteLength(result)}\r\n${result}\r\n`;

const queueText = (name: string, ready: number, scheduled: number): string => `+OK 1\r\n${name} 2\r\nready-len ${ready}\r\nscheduled-len ${scheduled}\r\n`;

/** The canaries, each the only job under the name `canary-<kind>`; each answers the same after the crash. */
const KINDS = ['completed', 'failed', 'leased', 'deleted', 'scheduled', 'lease1ms'] as const;
type Kind = (typeof KINDS)[number];
/**
 * The canaries of the last acts before the crash, whose TTR or TTL runs out while rq is
 * down (or, should rq restart sooner, right after): a lease of a job with one attempt
 * (it fails), a lease of a job with attempts left (it is back in its queue), and a job
 * with a TTL of DOWN_TTL_MS (it is gone).
 */
const DOWN = { fails: 'canary-lease-fails', retried: 'canary-lease-retried', expired: 'canary-ttl-expired' } as const;
const DOWN_TTR_MS = 500;
const DOWN_TTL_MS = 300;

it(`${NAMES} names and the canaries survive a SIGKILL of rq-mgr and every process under it; their TTL removes them after`, { timeout: 600_000 }, async () => {
  const t = root();
  const port = (await startProtocols(t, { workq: {} })).port('workq');
  const open = (): Promise<WorkqClient> => WorkqClient.connect(port);
  const c = await open();

  // The jobs, each under its own name, from CLIENTS connections at once.
  const pings = Array.from({ length: NAMES }, (_, i) => ({ id: randomUUID(), name: `ping${i + 1}` }));
  const firstAdd = Date.now();
  await Promise.all(
    Array.from({ length: CLIENTS }, async (_, k) => {
      const adder = await open();
      for (const { id, name } of pings.filter((_, i) => i % CLIENTS === k)) expect((await adder.add(id, name, LONG_TTR_MS, TTL_MS, `payload of ${name}`)).text, name).toBe(OK);
      adder.destroy();
    }),
  );

  // The canaries.
  const canary = Object.fromEntries(KINDS.map((kind) => [kind, randomUUID()])) as Record<Kind, string>;
  for (const kind of KINDS) {
    const [id, name] = [canary[kind], `canary-${kind}`];
    const added =
      kind === 'scheduled'
        ? c.schedule(id, name, LONG_TTR_MS, TTL_MS, new Date(Date.now() + 3_600_000).toISOString(), `payload of ${name}`)
        : c.add(id, name, kind === 'lease1ms' ? 1 : LONG_TTR_MS, TTL_MS, `payload of ${name}`, kind === 'lease1ms' ? '-max-attempts=1' : '');
    expect((await added).text, name).toBe(OK);
  }
  expect(leased(await c.lease(['canary-completed'], 0)).id).toBe(canary.completed);
  expect((await c.complete(canary.completed, 'result of canary-completed')).text).toBe(OK);
  expect(leased(await c.lease(['canary-failed'], 0)).id).toBe(canary.failed);
  expect((await c.fail(canary.failed, 'result of canary-failed')).text).toBe(OK);
  expect(leased(await c.lease(['canary-leased'], 0)).id).toBe(canary.leased);
  expect((await c.delete(canary.deleted)).text).toBe(OK);
  // A lease of 1 ms of a job with one attempt: it runs out, and the job fails.
  expect(leased(await c.lease(['canary-lease1ms'], 0)).id).toBe(canary.lease1ms);
  expect((await c.result(canary.lease1ms, 10_000)).text).toBe(resultText(canary.lease1ms, false, ''));
  const down = { fails: randomUUID(), retried: randomUUID(), expired: randomUUID() };
  expect((await c.add(down.fails, DOWN.fails, DOWN_TTR_MS, TTL_MS, 'fails', '-max-attempts=1')).text).toBe(OK);
  expect((await c.add(down.retried, DOWN.retried, DOWN_TTR_MS, TTL_MS, 'retried')).text).toBe(OK);
  // Its queue is made now, so that its add, the last, is quick.
  expect((await c.lease([DOWN.expired], 0)).text).toBe(TIMEOUT);
  const lastAdd = Date.now();

  // What every job and name answers before the crash (but those of the last acts).
  const jobIds = [...pings.map((p) => p.id), ...KINDS.map((kind) => canary[kind])];
  const names = [...pings.map((p) => p.name), ...KINDS.map((kind) => `canary-${kind}`)];
  const before = new Map<string, Answers>();
  for (const id of jobIds) before.set(id, await answersOf(c, id));
  const queuesBefore = new Map<string, string[]>();
  for (const name of names) queuesBefore.set(name, await queueOf(c, name));
  const listBefore = await allQueues(c);
  // What the canaries answer is what the test means them to.
  expect(before.get(canary.completed)!.result).toBe(resultText(canary.completed, true, 'result of canary-completed'));
  expect(before.get(canary.failed)!.result).toBe(resultText(canary.failed, false, 'result of canary-failed'));
  expect(await keysOf(c, canary.lease1ms)).toMatchObject({ state: '2', attempts: '1', 'max-attempts': '1', ttr: '1' });
  expect(await keysOf(c, canary.leased)).toMatchObject({ state: '4', attempts: '1' });
  expect(before.get(canary.deleted)).toEqual({ inspect: NOT_FOUND, result: NOT_FOUND });
  expect(await keysOf(c, canary.scheduled)).toMatchObject({ state: '0', attempts: '0' });
  expect(queuesBefore.get('canary-scheduled')![0]).toBe(queueText('canary-scheduled', 0, 1));
  for (const { id, name } of pings) {
    expect(await keysOf(c, id), name).toMatchObject({ name, payload: `payload of ${name}`, ttl: String(TTL_MS), state: '0', attempts: '0' });
    expect(before.get(id)!.result, name).toBe(TIMEOUT);
    expect(queuesBefore.get(name)![0], name).toBe(queueText(name, 1, 0));
  }

  // The last acts, then the crash.
  expect(leased(await c.lease([DOWN.fails], 0)).id).toBe(down.fails);
  expect(leased(await c.lease([DOWN.retried], 0)).id).toBe(down.retried);
  expect((await c.add(down.expired, DOWN.expired, LONG_TTR_MS, DOWN_TTL_MS, 'expired')).text).toBe(OK);
  c.destroy();
  await crashInstall(t);
  const started = await t.bin('rq-mgr', ['start']);
  expect(started.code, started.stdout + started.stderr).toBe(0);
  await waitFor(
    () =>
      open().then(
        (probe) => (probe.destroy(), true),
        () => false,
      ),
    30_000,
    'the Workq port to accept connections',
  );
  for (const name of [...names, ...Object.values(DOWN)]) await waitFor(async () => (await t.rpc(name, 'ping', '')) !== null, 30_000, `queue ${name} to answer`);

  // Every job and name answers as before.
  const d = await open();
  const after = new Map<string, Answers>();
  for (const id of jobIds) after.set(id, await answersOf(d, id));
  const queuesAfter = new Map<string, string[]>();
  for (const name of names) queuesAfter.set(name, await queueOf(d, name));
  const listAfter = await allQueues(d);
  expect(Date.now(), `the checks ended after the first job's TTL: TTL_MS (${TTL_MS}) must outlast the adds and the restart`).toBeLessThan(firstAdd + TTL_MS);
  expect(after).toEqual(before);
  expect(queuesAfter).toEqual(queuesBefore);
  for (const name of Object.values(DOWN)) {
    expect(listBefore.has(name), name).toBe(true);
    expect(listAfter.has(name), name).toBe(true);
    listBefore.delete(name);
    listAfter.delete(name);
  }
  expect(listAfter).toEqual(listBefore);
  // Each id is still held, and the waiting jobs are there to be leased.
  for (const id of [pings[1]!.id, canary.completed]) expect((await d.add(id, 'ping2', LONG_TTR_MS, TTL_MS, 'again')).text).toBe(clientError('Duplicate job'));
  expect(leased(await d.lease(['ping1'], 0))).toEqual({ id: pings[0]!.id, payload: 'payload of ping1' });

  // The last acts ran out: the job with one attempt failed, the other is back in its queue, the short TTL removed its job.
  expect((await d.result(down.fails, DOWN_TTR_MS + 10_000)).text).toBe(resultText(down.fails, false, ''));
  expect(await keysOf(d, down.fails)).toMatchObject({ state: '2', attempts: '1' });
  expect(leased(await d.lease([DOWN.retried], DOWN_TTR_MS + 10_000))).toEqual({ id: down.retried, payload: 'retried' });
  expect(await keysOf(d, down.retried)).toMatchObject({ state: '4', attempts: '2' });
  expect(await answersOf(d, down.expired)).toEqual({ inspect: NOT_FOUND, result: NOT_FOUND });
  expect((await queueOf(d, DOWN.expired))[0]).toBe(queueText(DOWN.expired, 0, 0));

  // Once their TTL has passed, every job but the scheduled one is gone, and the ids are free.
  const expiring = [...jobIds.filter((id) => id !== canary.scheduled && id !== canary.deleted), down.fails, down.retried];
  const left = new Set(expiring);
  await waitFor(
    async () => {
      for (const id of [...left]) if ((await d.inspect('job', id)).type === 'not-found') left.delete(id);
      return left.size === 0;
    },
    lastAdd + TTL_MS - Date.now() + 30_000,
    'the TTL to remove the jobs',
  );
  for (const id of expiring) expect(await answersOf(d, id), id).toEqual({ inspect: NOT_FOUND, result: NOT_FOUND });
  expect(await answersOf(d, canary.deleted)).toEqual({ inspect: NOT_FOUND, result: NOT_FOUND });
  expect(await answersOf(d, canary.scheduled)).toEqual(before.get(canary.scheduled));
  for (const name of [...names, ...Object.values(DOWN)]) expect((await queueOf(d, name))[0], name).toBe(queueText(name, 0, name === 'canary-scheduled' ? 1 : 0));
  // The unfinished ones are counted as evicted: the pings, the leased canary, the one back
  // in its queue, and the one whose short TTL ran out while rq was down (its queue, a pull
  // queue, is loaded at its first command after the restart, which removes it then).
  const server = await d.inspect('server');
  expect(server.type === 'records' && server.records[0]!.values['evicted-jobs']).toBe(String(NAMES + 3));
  for (const id of [pings[1]!.id, canary.deleted, down.expired]) {
    expect((await d.add(id, 'ping2', LONG_TTR_MS, TTL_MS, 'again')).text).toBe(OK);
    expect((await d.delete(id)).text).toBe(OK);
  }
  d.destroy();
});
