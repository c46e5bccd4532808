/**
 * The RPC added for the web (beyond RQ), against real queue processes and a real rq-mgr:
 * paging of `messages` with `offset` (every page in the unpaged order, with each
 * message's status text; RQ's replies unchanged without it), `search` (RQ's GET /search
 * semantics, paged, and free text), `stats` (the dashboard's view of a queue, with the
 * counters since the queue process started) and rq-mgr's `restarts`.
 *
 * What a command must not read is made unreadable in a way that would show: a `msg`
 * that is not JSON (a search that read it would skip the message, and the offset would
 * shift), or a FIFO, which blocks any reader (the queue process would hang).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { hashParts } from '../../src/domain/ids.js';
import { TestRoot, shortId, useTestRoot, waitFor, type QueueSpec } from '../helpers/install.js';
import { webPid } from '../helpers/web-process.js';

const root = useTestRoot();
let t: TestRoot;
beforeEach(() => {
  t = root();
});

type Listing = Array<Record<string, unknown>>;
interface SearchReply {
  messages: Array<Record<string, unknown>>;
  scanned: number;
  truncated: boolean;
}

/** Run `job` for 0..n-1, `width` at a time. */
async function inParallel(n: number, width: number, job: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < n) await job(next++);
  }));
}

/** A listing without the status texts a paged reply adds (to compare it with an unpaged one). */
function withoutStatus(listing: Listing): Listing {
  return listing.map(({ status: _, ...rest }) => rest);
}

/** The directory of a message in a state of a queue (hashed for done and relayed). */
function messageDir(queue: string, state: string, id: string): string {
  const hashed = state === 'done' || state === 'relayed' ? hashParts(id)! : [];
  return path.join(t.queueDir(queue), state, ...hashed, id);
}

/** Start queue `s` with a bash script of this body. */
async function startScripted(body: string, spec: Partial<QueueSpec> = {}): Promise<void> {
  fs.writeFileSync(path.join(t.root, 's.sh'), `#!/bin/bash\n${body}\n`, { mode: 0o755 });
  t.addQueue({ name: 's', script: './s.sh', ...spec });
  await t.start('s');
}

/** Every page of `size` of a state's listing, walked with offset until a short page. */
async function allPages(queue: string, state: string, size: number): Promise<Listing> {
  const out: Listing = [];
  for (let offset = 0; ; offset += size) {
    const page = (await t.rpc(queue, 'messages', { state, offset, limit: size })) as Listing;
    expect(page.length).toBeLessThanOrEqual(size);
    out.push(...page);
    if (page.length < size) return out;
  }
}

/**
 * Finished messages written straight into a state directory, as an older install (or
 * another host) left them: `count` ids per minute over `minutes` minute directories.
 */
function seedFinished(queue: string, state: 'done' | 'err' | 'relayed', minutes: number, count: number): string[] {
  const ids: string[] = [];
  for (let m = 0; m < minutes; m++) {
    for (let i = 0; i < count; i++) {
      const mm = String(m).padStart(2, '0');
      const id = `20250102.03${mm}.${String(i).padStart(2, '0')}.123.${9000 + m * 100 + i}`;
      const dir = state === 'err' ? path.join(t.queueDir(queue), 'err', id) : path.join(t.queueDir(queue), state, '20250102', '03', mm, id);
      fs.mkdirSync(dir, { recursive: true });
      fs.writeFileSync(path.join(dir, 'msg'), JSON.stringify({ msg_id: id, dest: queue, orig_msg_id: id, count: 0, max_count: 15, param1: `seed-${m}-${i}`, due: 1735786800 }));
      fs.writeFileSync(path.join(dir, 'status'), JSON.stringify({ job_status: state === 'relayed' ? `sent http://other:3333/q/${queue}/x${m}.${i}` : 'seeded' }));
      ids.push(id);
    }
  }
  return ids;
}

async function numMessages(queue: string): Promise<Record<'prep' | 'que' | 'run' | 'done' | 'err' | 'relayed', number>> {
  return (await t.rpc(queue, 'num_messages', {})) as Record<'prep' | 'que' | 'run' | 'done' | 'err' | 'relayed', number>;
}

describe('messages with offset', () => {
  it('pages que, prep and run in the unpaged order', async () => {
    t.addQueue({ name: 'p', num_workers: 0 });
    await t.start('p');
    const base = Math.floor(Date.now() / 1000) + 3600;
    // Dues repeat, so the order also depends on the id tie-break.
    await inParallel(300, 16, (i) => t.send('p', { due: base + ((i * 7919) % 97) }));
    for (let i = 0; i < 7; i++) await t.rpc('p', 'prep_message', { dest: 'p' });
    const que = (await t.rpc('p', 'messages', { state: 'que' })) as Listing;
    expect(que).toHaveLength(300);
    expect(withoutStatus(await allPages('p', 'que', 37))).toEqual(que);
    expect(await t.rpc('p', 'messages', { state: 'que', limit: 5 })).toEqual(que.slice(0, 5));
    expect(withoutStatus((await t.rpc('p', 'messages', { state: 'que', offset: 295 })) as Listing)).toEqual(que.slice(295));
    expect(await t.rpc('p', 'messages', { state: 'que', offset: 300, limit: 10 })).toEqual([]);
    const prep = (await t.rpc('p', 'messages', { state: 'prep' })) as Listing;
    expect(prep).toHaveLength(7);
    expect(withoutStatus(await allPages('p', 'prep', 3))).toEqual(prep);
    expect(await t.rpc('p', 'messages', { state: 'run', offset: 0, limit: 5 })).toEqual([]);
  });

  it('pages err and done over hundreds of messages and many minute directories', async () => {
    t.addQueue({ name: 'e', script: 'err.sh', num_workers: 4 });
    t.addQueue({ name: 'd', script: 'done.sh', num_workers: 4 });
    const seededErr = seedFinished('e', 'err', 3, 40);
    const seededDone = seedFinished('d', 'done', 6, 40);
    await t.start('e');
    await t.start('d');
    await inParallel(150, 16, (i) => t.send('e', { param1: `e${i}` }));
    await inParallel(150, 16, (i) => t.send('d', { param1: `d${i}` }));
    await waitFor(async () => (await numMessages('e')).err === 270, 30_000, '270 messages in err');
    await waitFor(async () => (await numMessages('d')).done === 390, 30_000, '390 messages in done');

    // err without offset: RQ's listing, all of it whatever the limit.
    const err = (await t.rpc('e', 'messages', { state: 'err' })) as Listing;
    expect(err).toHaveLength(270);
    expect(err.map((m) => m['msg_id'])).toEqual(err.map((m) => m['msg_id'] as string).sort().reverse());
    expect(err.map((m) => m['msg_id'])).toEqual(expect.arrayContaining(seededErr));
    expect(await t.rpc('e', 'messages', { state: 'err', limit: 10 })).toEqual(err);
    // With offset, the limit is honoured.
    expect(withoutStatus(await allPages('e', 'err', 50))).toEqual(err);
    expect(withoutStatus((await t.rpc('e', 'messages', { state: 'err', offset: 0, limit: 10 })) as Listing)).toEqual(err.slice(0, 10));

    const done = (await t.rpc('d', 'messages', { state: 'done' })) as Listing;
    expect(done).toHaveLength(390);
    expect(done.slice(150).map((m) => m['msg_id'])).toEqual([...seededDone].reverse());
    // Pages of 33 start inside minute directories of 40 and skip whole ones.
    expect(withoutStatus(await allPages('d', 'done', 33))).toEqual(done);
    expect(await t.rpc('d', 'messages', { state: 'done', limit: 7 })).toEqual(done.slice(0, 7));
    expect(withoutStatus((await t.rpc('d', 'messages', { state: 'done', offset: 200, limit: 80 })) as Listing)).toEqual(done.slice(200, 280));
    expect(await t.rpc('d', 'messages', { state: 'done', offset: 390, limit: 5 })).toEqual([]);
  });

  it('pages relayed, reading only the page', async () => {
    t.addQueue({ name: 'r', num_workers: 0 });
    const ids = seedFinished('r', 'relayed', 4, 10).reverse();
    await t.start('r');
    const all = (await t.rpc('r', 'messages', { state: 'relayed' })) as Listing;
    expect(all.map((m) => m['msg_id'])).toEqual(ids);
    expect(all[0]).toEqual({ msg_id: ids[0], status: 'relayed', dest: 'r', new_msg: 'http://other:3333/q/r/x3.9' });
    const pages = await allPages('r', 'relayed', 7);
    expect(withoutStatus(pages)).toEqual(withoutStatus(all));
    expect(pages[0]).toEqual({ ...all[0], status: 'relayed - sent http://other:3333/q/r/x3.9' });
    // Past the first two pages, files that block any reader: listing those pages never opens them.
    for (const id of ids.slice(14)) {
      for (const file of ['msg', 'status']) {
        const at = path.join(messageDir('r', 'relayed', id), file);
        fs.rmSync(at);
        execFileSync('mkfifo', [at]);
      }
    }
    expect(await t.rpc('r', 'messages', { state: 'relayed', offset: 7, limit: 7 })).toEqual(pages.slice(7, 14));
    expect(await t.rpc('r', 'messages', { state: 'relayed', limit: 14 })).toEqual(all.slice(0, 14));
  });

  it('gives every entry of a paged listing its status text, as get_message_status does', async () => {
    await startScripted(
      [
        'case "$RQ_PARAM1" in',
        '  done) echo "done all good" >&3 ;;',
        '  err) echo "err asked to" >&3 ;;',
        '  relayed) echo "relayed sent on" >&3 ;;',
        '  *) echo "run waiting for go" >&3; until [ -e go ]; do sleep 0.05; done; echo "done went" >&3 ;;',
        'esac',
      ].join('\n'),
      { num_workers: 2 },
    );
    for (const state of ['done', 'err', 'relayed']) await t.waitState('s', await t.send('s', { param1: state }), state);
    const running = await t.send('s', { param1: 'wait' });
    await waitFor(async () => (await t.statusOf('s', running)) === 'run - waiting for go', 10_000, 'the run to report');
    await t.send('s', { param1: 'later', due: Math.floor(Date.now() / 1000) + 3600 });
    await t.rpc('s', 'prep_message', { dest: 's' });
    const texts: string[] = [];
    for (const state of ['prep', 'que', 'run', 'done', 'err', 'relayed']) {
      const [entry, ...rest] = (await t.rpc('s', 'messages', { state, offset: 0, limit: 5 })) as Listing;
      expect(rest).toEqual([]);
      expect(entry!['status']).toBe(await t.statusOf('s', entry!['msg_id'] as string));
      texts.push(entry!['status'] as string);
    }
    expect(texts).toEqual(['prep', 'que', 'run - waiting for go', 'done - all good', 'err - asked to', 'relayed - sent on']);
    // Unpaged, RQ's run entry: the last line without the state.
    expect(await t.rpc('s', 'messages', { state: 'run' })).toEqual([{ msg_id: running, status: 'waiting for go', dest: 's' }]);
    // A running message's status comes from memory, even when its status file cannot be read.
    const statusFile = path.join(messageDir('s', 'run', running), 'status');
    fs.rmSync(statusFile, { force: true });
    fs.mkdirSync(statusFile);
    expect(await t.statusOf('s', running)).toBe('run - waiting for go');
    expect(await t.rpc('s', 'messages', { state: 'run', offset: 0 })).toEqual([{ msg_id: running, status: 'run - waiting for go', dest: 's' }]);
  });

  it('refuses a bad offset or limit with a clear reason', async () => {
    t.addQueue({ name: 'p', num_workers: 0 });
    await t.start('p');
    expect(await t.rpc('p', 'messages', { state: 'que', offset: -1 })).toEqual(['fail', "'offset' must be an integer >= 0, got -1", 'RQ_BAD_REQUEST']);
    expect(await t.rpc('p', 'messages', { state: 'que', offset: 1.5 })).toEqual(['fail', "'offset' must be an integer >= 0, got 1.5", 'RQ_BAD_REQUEST']);
    expect(await t.rpc('p', 'messages', { state: 'done', offset: '2' })).toEqual(['fail', `'offset' must be an integer >= 0, got "2"`, 'RQ_BAD_REQUEST']);
    expect(await t.rpc('p', 'messages', { state: 'err', offset: 0, limit: -5 })).toEqual(['fail', "'limit' must be an integer >= 0, got -5", 'RQ_BAD_REQUEST']);
    expect(await t.rpc('p', 'messages', { state: 'nope', offset: -1 })).toEqual(['fail', "invalid or missing 'state' field (nope)", 'RQ_BAD_REQUEST']);
    expect(await t.rpc('p', 'messages', { state: 'que', offset: null, limit: null })).toEqual([]);
  });
});

describe('search', () => {
  /**
   * Queue `s`: two done, one err, then (paused) two waiting and RQ's five-message search
   * fixture in prep (param1 ear, hello:pear, search, html, html), one with an attachment.
   */
  async function searchFixture(): Promise<Record<string, string>> {
    await startScripted('if [ "$RQ_PARAM2" = fail ]; then echo "err asked to" >&3; else echo "done all good" >&3; fi');
    const ids: Record<string, string> = {};
    for (const p of ['done-a', 'done-b']) {
      ids[p] = await t.send('s', { param1: p, src: 'runner' });
      await t.waitState('s', ids[p], 'done');
    }
    ids['failed'] = await t.send('s', { param1: 'failed', param2: 'fail' });
    await t.waitState('s', ids['failed'], 'err');
    fs.writeFileSync(path.join(t.root, 'config/s.pause'), '');
    ids['wait-1'] = await t.send('s', { param1: 'wait-1', src: 'websearch' });
    ids['wait-2'] = await t.send('s', { param1: 'wait-2', src: 'websearch', due: '1000000000' });
    for (const p of ['ear', 'hello:pear', 'search', 'html', 'html2']) {
      const [, full] = (await t.rpc('s', 'prep_message', { dest: 's', param1: p === 'html2' ? 'html' : p })) as [string, string];
      ids[p] = shortId(full);
    }
    const file = path.join(t.root, 'a.txt');
    fs.writeFileSync(file, 'attached');
    await t.rpc('s', 'attach_message', { msg_id: ids['search'], pathname: file });
    return ids;
  }

  const search = async (arg: Record<string, unknown>): Promise<SearchReply> => {
    const reply = (await t.rpc('s', 'search', arg)) as [string, SearchReply];
    expect(reply[0]).toBe('ok');
    return reply[1];
  };
  const idsOf = (r: SearchReply): unknown[] => r.messages.map((m) => m['msg_id']);

  it('finds as RQ does: exact, substring, unknown fields, every state in order', async () => {
    const ids = await searchFixture();
    const all = await search({});
    expect(all).toMatchObject({ scanned: 10, truncated: false });
    // RQ's order: prep (creation order), que (run order), run, err, done (newest first), relayed.
    expect(idsOf(all)).toEqual(['ear', 'hello:pear', 'search', 'html', 'html2', 'wait-2', 'wait-1', 'failed', 'done-b', 'done-a'].map((k) => ids[k]));
    expect(all.messages.map((m) => m['state'])).toEqual(['prep', 'prep', 'prep', 'prep', 'prep', 'que', 'que', 'err', 'done', 'done']);
    // RQ's test_web_search.rb: 3 substring matches, 1 exact, none for an unknown field.
    expect(idsOf(await search({ query: { param1: 'ear' } }))).toEqual([ids['ear'], ids['hello:pear'], ids['search']]);
    expect(idsOf(await search({ query: { param1: 'ear' }, exact: true }))).toEqual([ids['ear']]);
    expect((await search({ query: { fakestuff: 'asdfasdf' } })).messages).toEqual([]);
    expect(idsOf(await search({ query: { param1: 'html', dest: 's' }, exact: true }))).toEqual([ids['html'], ids['html2']]);
    // A search view is get_message's read view without `_attachments`.
    const [view] = (await search({ query: { msg_id: ids['done-a']! } })).messages;
    expect(view).toEqual(await t.message('s', ids['done-a']!));
    expect(view).toMatchObject({ path: expect.stringMatching(/^queue\/s\/done\/\d{8}\/\d\d\/\d\d\//), status: 'done - all good', state: 'done' });
    expect(Object.keys(await t.message('s', ids['search']!))).toContain('_attachments');
    expect(Object.keys((await search({ query: { param1: 'search' }, exact: true })).messages[0]!)).not.toContain('_attachments');
  });

  it('filters by state, status and any field of the view', async () => {
    const ids = await searchFixture();
    expect(idsOf(await search({ query: { state: 'que' } }))).toEqual([ids['wait-2'], ids['wait-1']]);
    expect(idsOf(await search({ query: { param1: 'ear' }, states: ['prep'] }))).toEqual([ids['ear'], ids['hello:pear'], ids['search']]);
    expect(idsOf(await search({ states: ['err', 'done'] }))).toEqual([ids['failed'], ids['done-b'], ids['done-a']]);
    expect(idsOf(await search({ query: { status: 'all good' } }))).toEqual([ids['done-b'], ids['done-a']]);
    expect(idsOf(await search({ query: { status: 'que' }, exact: true }))).toEqual([ids['wait-2'], ids['wait-1']]);
    expect(idsOf(await search({ query: { status: 'err - asked to' }, exact: true }))).toEqual([ids['failed']]);
    expect(idsOf(await search({ query: { src: 'search' } }))).toEqual([ids['wait-2'], ids['wait-1']]);
    // Non-strings: RQ's == never equals the text; a substring looks in the JSON text.
    expect((await search({ query: { count: '0' }, exact: true })).messages).toEqual([]);
    expect((await search({ query: { count: '0' } })).messages).toHaveLength(10);
    expect(idsOf(await search({ query: { due: '1000000000' }, exact: true }))).toEqual([ids['wait-2']]);
    // Only own fields of a message count, never what every object inherits.
    expect((await search({ query: { constructor: 'Object' } })).messages).toEqual([]);
    expect(idsOf(await search({ query: { param2: 'fai' } }))).toEqual([ids['failed']]);
  });

  it('reads a file only for what memory cannot answer', async () => {
    const ids = await searchFixture();
    // Unreadable messages: a search that read one would skip it, and the offset would shift.
    for (const [key, state] of [['ear', 'prep'], ['wait-2', 'que'], ['done-b', 'done']] as const) {
      fs.writeFileSync(path.join(messageDir('s', state, ids[key]!), 'msg'), '{not json');
    }
    // The state, the id, and a waiting message's params are in memory: matched and skipped unread.
    expect(idsOf(await search({ query: { state: 'prep' }, offset: 1 }))).toEqual(['hello:pear', 'search', 'html', 'html2'].map((k) => ids[k]));
    expect(idsOf(await search({ query: { state: 'que' }, offset: 1 }))).toEqual([ids['wait-1']]);
    expect(idsOf(await search({ text: 'wait-', offset: 1 }))).toEqual([ids['wait-1']]);
    expect(idsOf(await search({ query: { param1: 'wait' }, offset: 1 }))).toEqual([ids['wait-1']]);
    expect(idsOf(await search({ states: ['done'], offset: 1 }))).toEqual([ids['done-a']]);
    // Shown, they must be read: unreadable ones are left out.
    expect(idsOf(await search({ states: ['que', 'done'] }))).toEqual([ids['wait-1'], ids['done-a']]);
  });

  it('search finds a message whose move is on disk before it is in memory, in the state it moved to', async () => {
    const ids = await searchFixture();
    // A commit renames prep → que, then fsyncs the directories; memory follows only then.
    // The operator's mv stands for those milliseconds (a cron message's commit is one).
    fs.renameSync(messageDir('s', 'prep', ids['ear']!), messageDir('s', 'que', ids['ear']!));
    const [view] = (await search({ query: { param1: 'ear' }, exact: true })).messages;
    expect(view).toMatchObject({ msg_id: ids['ear'], param1: 'ear', state: 'que', path: `queue/s/que/${ids['ear']}`, status: 'que' });
    // Matched on the id alone (nothing read before the view), and on the status: the same view.
    expect((await search({ text: ids['ear']! })).messages).toEqual([view]);
    expect((await search({ query: { status: 'prep', param1: 'ear' }, exact: true })).messages).toEqual([view]);
    // Gone from both: not shown.
    fs.rmSync(messageDir('s', 'que', ids['ear']!), { recursive: true });
    expect((await search({ query: { param1: 'ear' }, exact: true })).messages).toEqual([]);
  });

  it('pages with limit and offset in the unpaged order, and says when it stopped early', async () => {
    const ids = await searchFixture();
    const all = idsOf(await search({}));
    expect(await search({ limit: 3 })).toMatchObject({ scanned: 3, truncated: true });
    const pages: unknown[] = [];
    for (let offset = 0; offset < 12; offset += 4) pages.push(...idsOf(await search({ offset, limit: 4 })));
    expect(pages).toEqual(all);
    const last = await search({ offset: 8, limit: 4 });
    expect(last).toMatchObject({ scanned: 10, truncated: false });
    expect(idsOf(last)).toEqual(all.slice(8));
    // Limit reached on the last message: nothing left unscanned.
    expect(await search({ offset: 8, limit: 2 })).toMatchObject({ scanned: 10, truncated: false });
    const second = await search({ query: { param1: 'html' }, offset: 1, limit: 1 });
    expect(idsOf(second)).toEqual([ids['html2']]);
    expect(second.truncated).toBe(true);
  });

  it('finds free text in the id, a param or the status text, in one pass', async () => {
    const ids = await searchFixture();
    // The id: equal or a piece of it, from memory in every state.
    expect(idsOf(await search({ text: ids['done-a']!.slice(1) }))).toEqual([ids['done-a']]);
    expect(idsOf(await search({ text: ids['wait-1']! }))).toEqual([ids['wait-1']]);
    // A param: que from memory, prep, err and done from `msg`.
    expect(idsOf(await search({ text: 'wait-' }))).toEqual([ids['wait-2'], ids['wait-1']]);
    expect(idsOf(await search({ text: 'ear' }))).toEqual([ids['ear'], ids['hello:pear'], ids['search']]);
    expect(idsOf(await search({ text: 'done-' }))).toEqual([ids['done-b'], ids['done-a']]);
    expect(idsOf(await search({ text: 'fai' }))).toEqual([ids['failed']]);
    // The status text, state prefix included; the view shows it.
    const good = await search({ text: 'all good' });
    expect(idsOf(good)).toEqual([ids['done-b'], ids['done-a']]);
    expect(good.messages.map((m) => m['status'])).toEqual(['done - all good', 'done - all good']);
    expect(idsOf(await search({ text: 'asked to' }))).toEqual([ids['failed']]);
    expect(idsOf(await search({ text: 'prep' }))).toEqual(['ear', 'hello:pear', 'search', 'html', 'html2'].map((k) => ids[k]));
    // Not in other fields of `msg`, and only in the states asked for.
    expect((await search({ text: 'websearch' })).messages).toEqual([]);
    expect((await search({ text: 'ear', states: ['que', 'done'] })).messages).toEqual([]);
    // With query pairs: both must hold; `exact` is for the pairs only.
    expect(idsOf(await search({ text: 'ear', query: { param1: 'hello' } }))).toEqual([ids['hello:pear']]);
    expect(idsOf(await search({ text: 'ear', query: { param1: 'ear' }, exact: true }))).toEqual([ids['ear']]);
    expect(idsOf(await search({ text: 'wait', query: { due: '1000000000' }, exact: true }))).toEqual([ids['wait-2']]);
    expect(idsOf(await search({ text: 'all good', query: { param1: 'done-a' } }))).toEqual([ids['done-a']]);
    expect((await search({ text: 'fai', query: { state: 'done' } })).messages).toEqual([]);
    // Stops at limit; offset skips matches.
    const two = await search({ text: 'ear', limit: 2 });
    expect(idsOf(two)).toEqual([ids['ear'], ids['hello:pear']]);
    expect(two.truncated).toBe(true);
    expect(idsOf(await search({ text: 'ear', offset: 1, limit: 1 }))).toEqual([ids['hello:pear']]);
    expect(await search({ text: 'ear', offset: 2 })).toMatchObject({ scanned: 10, truncated: false });
  });

  it('finds free text in the status a run left on a waiting message, after a restart too', async () => {
    await startScripted('if [ "$RQ_PARAM1" = slow ]; then echo "resend 3600-rate limited" >&3; else echo "done fine" >&3; fi');
    const slow = await t.send('s', { param1: 'slow', param2: { tag: 'zebra' } });
    await waitFor(async () => (await t.statusOf('s', slow)) === 'que - 3600-rate limited', 10_000, 'the resend');
    const fast = await t.send('s', { param1: 'fast' });
    await t.waitState('s', fast, 'done');
    const waiting = await t.send('s', { param1: 'later', due: 4102444800 });
    for (const restart of [false, true]) {
      if (restart) {
        await t.kill9('s');
        await t.start('s');
      }
      const [view] = (await search({ text: 'rate limited' })).messages;
      expect(view).toMatchObject({ msg_id: slow, state: 'que', status: 'que - 3600-rate limited', param1: 'slow' });
      // A waiting message without a status file has the status text `que`.
      expect(idsOf(await search({ text: 'que' }))).toEqual([slow, waiting]);
      // A param that is not a string is looked for in its JSON text.
      expect(idsOf(await search({ text: '"tag":"zebra"' }))).toEqual([slow]);
      expect(idsOf(await search({ text: 'fine' }))).toEqual([fast]);
    }
  });

  it('refuses a bad argument with a clear reason, and answers fail while DOWN', async () => {
    t.addQueue({ name: 's', num_workers: 0 });
    await t.start('s');
    expect(await t.rpc('s', 'search', { query: 'x' })).toEqual(['fail', `'query' must be an object of strings, got "x"`, 'RQ_BAD_REQUEST']);
    expect(await t.rpc('s', 'search', { query: { param1: 1 } })).toEqual(['fail', `'query' must be an object of strings, got {"param1":1}`, 'RQ_BAD_REQUEST']);
    expect(await t.rpc('s', 'search', { exact: 'yes' })).toEqual(['fail', `'exact' must be true or false, got "yes"`, 'RQ_BAD_REQUEST']);
    expect(await t.rpc('s', 'search', { states: ['que', 'nope'] })).toEqual([
      'fail',
      `'states' must be an array of states (prep, que, run, done, err, relayed), got ["que","nope"]`,
      'RQ_BAD_REQUEST',
    ]);
    expect(await t.rpc('s', 'search', { limit: -1 })).toEqual(['fail', "'limit' must be an integer >= 0, got -1", 'RQ_BAD_REQUEST']);
    expect(await t.rpc('s', 'search', { text: '' })).toEqual(['fail', `'text' must be a non-empty string, got ""`, 'RQ_BAD_REQUEST']);
    expect(await t.rpc('s', 'search', { text: 7 })).toEqual(['fail', `'text' must be a non-empty string, got 7`, 'RQ_BAD_REQUEST']);
    expect(await t.rpc('s', 'search', { text: ['a'] })).toEqual(['fail', `'text' must be a non-empty string, got ["a"]`, 'RQ_BAD_REQUEST']);
    expect(await t.rpc('s', 'search', { text: null })).toEqual(['ok', { messages: [], scanned: 0, truncated: false }]);
    expect(await t.rpc('s', 'search', { states: [] })).toEqual(['ok', { messages: [], scanned: 0, truncated: false }]);
    fs.writeFileSync(path.join(t.root, 'config/s.down'), '');
    expect(await t.rpc('s', 'search', {})).toEqual(['fail', 'status: DOWN', 'RQ_QUEUE_DOWN']);
  });
});

describe('stats', () => {
  it('counts creations, completions and run durations since the process started', async () => {
    t.addQueue({ name: 'd', script: 'done.sh', num_workers: 2, schedule: [{ cron: '0 0 1 1 *', param1: 'yearly' }] });
    t.addQueue({ name: 'e', script: 'err.sh' });
    await t.start('d');
    await t.start('e');
    const done = await Promise.all([1, 2, 3].map(() => t.send('d', {})));
    for (const id of done) await t.waitState('d', id, 'done');
    for (const id of [await t.send('e', {}), await t.send('e', {})]) await t.waitState('e', id, 'err');
    await t.rpc('d', 'prep_message', { dest: 'd' });
    const d = (await t.rpc('d', 'stats', '')) as Record<string, unknown>;
    expect(d).toMatchObject({ created: 4, done: 3, err: 0, relayed: 0, spawn_failures: 0, done_last_minute: 3, err_last_minute: 0 });
    // The dashboard's view of the queue, in the same reply.
    expect(d).toMatchObject({
      pid: t.pidIn('queues/d/queue.pid'),
      status: 'UP',
      admin: 'UP',
      counts: { prep: 1, que: 0, run: 0, done: 3, err: 0, relayed: 0 },
      schedule: [{ cron: '0 0 1 1 *', params: { param1: 'yearly', param2: null, param3: null, param4: null } }],
    });
    expect(d['uptime']).toBeLessThanOrEqual(((await t.rpc('d', 'uptime', '')) as [number])[0]);
    const runs = d['run_seconds'] as { sum: number; count: number; buckets: Record<string, number> };
    expect(runs.count).toBe(3);
    expect(runs.sum).toBeGreaterThan(0);
    expect(Object.keys(runs.buckets).sort()).toEqual(['+Inf', '0.1', '0.5', '1', '120', '30', '5', '600'].sort());
    expect(runs.buckets['+Inf']).toBe(3);
    expect(runs.buckets['600']).toBe(3);
    expect(await t.rpc('e', 'stats', {})).toMatchObject({ created: 2, done: 0, err: 2, err_last_minute: 2, run_seconds: { count: 2 } });
    // Counters are per process: a restart starts from zero; and stats answers while DOWN.
    await t.kill9('d');
    await t.start('d');
    fs.writeFileSync(path.join(t.root, 'config/d.down'), '');
    expect(await t.rpc('d', 'stats', '')).toMatchObject({ status: 'DOWN', admin: 'DOWN', created: 0, done: 0, done_last_minute: 0, run_seconds: { count: 0 } });
  });

  it('counts a run whose worker cannot be started once, however often it is retried', async () => {
    // A script that cannot be executed: SCRIPTERROR, retried every second.
    t.addQueue({ name: 'w', script: 'later.sh' });
    // A script whose interpreter does not exist: the spawn itself fails.
    fs.writeFileSync(path.join(t.root, 'nointerp.sh'), '#!/nonexistent/interpreter\n', { mode: 0o755 });
    t.addQueue({ name: 'x', script: './nointerp.sh' });
    await t.start('w');
    await t.start('x');
    // The first message waits in run for the script; the others wait in que behind it.
    // Each create runs a scheduler pass, which tries the stuck run again.
    const stuck = [await t.send('w', {}), await t.send('w', {}), await t.send('w', {})];
    expect(await t.rpc('w', 'status', '')).toEqual(['SCRIPTERROR']);
    expect(await t.rpc('w', 'stats', '')).toMatchObject({ status: 'SCRIPTERROR', admin: 'UP', spawn_failures: 1, done: 0 });
    fs.writeFileSync(path.join(t.root, 'later.sh'), '#!/bin/sh\necho done fixed >&3\n', { mode: 0o755 });
    t.reconfigure({ name: 'w', script: './later.sh' });
    for (const id of stuck) await t.waitState('w', id, 'done');
    expect(await t.rpc('w', 'stats', '')).toMatchObject({ status: 'UP', spawn_failures: 1, done: 3, run_seconds: { count: 3 } });

    const failed = await t.send('x', {});
    expect(await t.waitState('x', failed, 'err')).toMatch(/^err - SPAWN FAILED - MOVING TO ERR - /);
    expect(await t.rpc('x', 'stats', '')).toMatchObject({ spawn_failures: 1, err: 1, err_last_minute: 1, run_seconds: { count: 0 } });
  });
});

describe('rq-mgr restarts', () => {
  it('counts automatic restarts per queue and for the web, not restarts by hand', async () => {
    t.addQueue({ name: 'q1', script: 'done.sh' });
    t.addQueue({ name: 'q2', script: 'done.sh' });
    await t.usePort();
    expect((await t.bin('rq-mgr', ['start'])).code).toBe(0);
    expect(await t.mgr('restarts')).toEqual({ queues: { q1: 0, q2: 0 }, web: 0 });
    for (const n of [1, 2]) {
      const before = t.pidIn('queues/q1/queue.pid')!;
      process.kill(before, 'SIGKILL');
      await waitFor(async () => ((await t.mgr('restarts')) as { queues: Record<string, number> }).queues['q1'] === n, 5000, `restart ${n} of q1`);
      await waitFor(async () => (await t.rpc('q1', 'ping', '')) !== null, 5000, 'q1 to answer again');
      expect(t.pidIn('queues/q1/queue.pid')).not.toBe(before);
    }
    expect(await t.mgr('restart_queue', 'q1')).toEqual(['ok', 'q1']);
    process.kill(webPid(t), 'SIGKILL');
    await waitFor(async () => ((await t.mgr('restarts')) as { web: number }).web === 1, 5000, 'the web restart');
    expect(await t.mgr('restarts')).toEqual({ queues: { q1: 2, q2: 0 }, web: 1 });
  });
});
