// The router's rules file (docs/router.md, rq's JSON form in src/router/rules.ts): what a
// good file parses to, every validation error with the rule and field it names (on one
// line), RQ's Ruby rules refused with a pointer to the JSON form, the default rule,
// matching, host selection with a chosen random source, and RQ's address transform with
// the two examples of RQ's router.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { RqError } from '../../src/domain/errors.js';
import { describeRule, loadRules, matchRule, parseRules, rubyRulesWarning, selectHosts, transformDest, type Rule } from '../../src/router/rules.js';

const GOOD = [
  { name: 'stats to both stats hosts', action: 'relay', dest: '^stats_', route: ['stats1.example.com', 'stats2.example.com:3334'], log: true },
  {
    name: 'one log box of each pair',
    action: 'relay',
    dest: '^box_',
    route: [
      ['logbox-a1.example.com', 'logbox-a2.example.com'],
      ['logbox-b1.example.com', 'logbox-b2.example.com'],
    ],
  },
  { name: 'spread the cleaners', action: 'balance', src: '^cron$', dest: 'cleaner', route: ['worker1.example.com', 'worker2.example.com'], delay: 5 },
  {
    name: 'billing in prod only',
    action: { env: 'BR_ENV', equals: 'prod', then: 'relay', else: 'done' },
    dest: '^billing$',
    route: ['http://billing.example.com:3333/q/billing'],
    comment: 'staging has no billing host',
  },
  { name: 'drop test traffic', action: 'done', src: '^test-' },
  { name: 'default', action: 'done', log: true },
];

function parse(rules: unknown, env: Record<string, string> = {}): Rule[] {
  return parseRules(JSON.stringify(rules), env);
}

/** The RqError a file gives (the test fails if it parses). */
function problem(rules: unknown, env: Record<string, string> = {}): RqError {
  try {
    parse(rules, env);
  } catch (e) {
    expect(e).toBeInstanceOf(RqError);
    expect((e as RqError).code).toBe('RQ_CONFIG');
    return e as RqError;
  }
  throw new Error(`parsed: ${JSON.stringify(rules)}`);
}

describe('parseRules: a good file', () => {
  it('gives the rules in file order, the default last, with defaults filled in', () => {
    const rules = parse(GOOD);
    expect(rules.map((r) => [r.name, r.action, r.log, r.delay])).toEqual([
      ['stats to both stats hosts', 'relay', true, 0],
      ['one log box of each pair', 'relay', false, 0],
      ['spread the cleaners', 'balance', false, 5],
      ['billing in prod only', 'done', false, 0],
      ['drop test traffic', 'done', false, 0],
      ['default', 'done', true, 0],
    ]);
    expect(rules[0]!.route).toEqual(['stats1.example.com', 'stats2.example.com:3334']);
    expect(rules[4]!.route).toEqual([]);
    expect(rules[2]!.src?.source).toBe('^cron$');
    expect(rules[0]!.src).toBeNull();
  });

  it('resolves a conditional action with the environment it is given', () => {
    expect(parse(GOOD, { BR_ENV: 'prod' })[3]!.action).toBe('relay');
    expect(parse(GOOD, { BR_ENV: 'staging' })[3]!.action).toBe('done');
  });

  it('adds the built-in default (err, logged) when the file has none', () => {
    const rules = parse([{ name: 'only', action: 'done', dest: 'x' }]);
    expect(rules).toHaveLength(2);
    expect(rules[1]).toEqual({ name: 'default', action: 'err', src: null, dest: null, route: [], log: true, delay: 0 });
    expect(parse([])).toHaveLength(1);
  });

  it('takes a delay of up to 30 s', () => {
    expect(parse([{ name: 'slow', action: 'done', dest: 'x', delay: 30 }])[0]!.delay).toBe(30);
  });

  it('always logs an err rule', () => {
    expect(parse([{ name: 'e', action: 'err', dest: 'x', log: false }])[0]!.log).toBe(true);
    expect(parse([{ name: 'e', action: { env: 'E', equals: '1', then: 'err', else: 'done' }, dest: 'x' }], { E: '1' })[0]!.log).toBe(true);
  });

  it('describes a rule as one JSON line', () => {
    expect(describeRule(parse(GOOD)[2]!)).toBe(
      '{"name":"spread the cleaners","action":"balance","src":"^cron$","dest":"cleaner","route":["worker1.example.com","worker2.example.com"],"log":false,"delay":5}',
    );
  });
});

describe('parseRules: every mistake names the rule and the field', () => {
  const ok = { name: 'r', action: 'done', dest: 'x' };
  it.each<[string, unknown, string]>([
    ['an object', { rules: [] }, 'must be a JSON array of rules, got an object'],
    ['a string', 'rules', 'must be a JSON array of rules, got "rules"'],
    ['a rule that is not an object', [ok, 'x'], 'rule 2: must be an object, got "x"'],
    ['no name', [{ action: 'done', dest: 'x' }], 'rule 1: "name" must be a non-empty string, got nothing'],
    ['a blank name', [{ ...ok, name: ' ' }], 'rule 1: "name" must be a non-empty string, got " "'],
    ['an unknown field', [{ ...ok, desc: 'r' }], 'rule 1 ("r"): unknown field "desc" (a rule has name, action, src, dest, route, log, delay, comment)'],
    ['a comment that is not a string', [{ ...ok, comment: 1 }], 'rule 1 ("r"): "comment" must be a string, got 1'],
    ['no action', [{ name: 'r', dest: 'x' }], 'rule 1 ("r"): "action" is required'],
    ['an unknown action', [{ ...ok, action: 'drop' }], 'rule 1 ("r"): "action" must be one of relay, balance, done, err, or {"env": …, "equals": …, "then": …, "else": …}, got "drop"'],
    ['a Ruby symbol', [{ ...ok, action: ':done' }], 'got ":done"'],
    ['a condition with an unknown field', [{ ...ok, action: { env: 'E', equals: 'a', then: 'done', else: 'err', otherwise: 'x' } }], 'rule 1 ("r"): "action" has an unknown field "otherwise"'],
    ['a condition without env', [{ ...ok, action: { equals: 'a', then: 'done', else: 'err' } }], 'rule 1 ("r"): "action.env" must name an environment variable, got nothing'],
    ['a condition equal to a number', [{ ...ok, action: { env: 'E', equals: 1, then: 'done', else: 'err' } }], 'rule 1 ("r"): "action.equals" must be a string, got 1'],
    ['a condition with a bad then', [{ ...ok, action: { env: 'E', equals: 'a', then: 'drop', else: 'err' } }], 'rule 1 ("r"): "action.then" must be one of relay, balance, done, err, got "drop"'],
    ['a condition without else', [{ ...ok, action: { env: 'E', equals: 'a', then: 'done' } }], 'rule 1 ("r"): "action.else" must be one of relay, balance, done, err, got nothing'],
    ['src not a string', [{ ...ok, src: 5 }], 'rule 1 ("r"): "src" must be a regular expression in a string, got 5'],
    ['a bad dest pattern', [{ ...ok, dest: '(' }], 'rule 1 ("r"): "dest" is not a valid regular expression: Invalid regular expression: /(/: Unterminated group'],
    ['neither src nor dest', [{ name: 'r', action: 'done' }], 'rule 1 ("r"): needs "src" or "dest" (only the rule named "default" matches every message)'],
    ['a default with a pattern', [{ name: 'default', action: 'done', src: 'x' }], 'rule 1 ("default"): the default rule matches every message, so it takes no "src" or "dest"'],
    ['a default before the end', [{ name: 'default', action: 'done' }, ok], 'rule 1 ("default"): the default rule must be the last rule'],
    ['two rules with one name', [ok, ok], 'rule 2 ("r"): another rule has the same name'],
    ['log not a boolean', [{ ...ok, log: 'true' }], 'rule 1 ("r"): "log" must be true or false, got "true"'],
    [
      'a fractional delay',
      [{ ...ok, delay: 1.5 }],
      'rule 1 ("r"): "delay" must be a whole number of seconds from 0 to 30 (the router gives up on a message after 60 s, which could cut a relay short), got 1.5',
    ],
    ['a negative delay', [{ ...ok, delay: -1 }], '"delay" must be a whole number of seconds from 0 to 30'],
    ['a delay near the router’s limit', [{ ...ok, delay: 31 }], 'got 31'],
    ['a delay in a string', [{ ...ok, delay: '5' }], 'got "5"'],
    ['relay without a route', [{ ...ok, action: 'relay' }], 'rule 1 ("r"): "route" is required for action relay: the hosts to send to'],
    ['a condition that may balance, without a route', [{ ...ok, action: { env: 'E', equals: 'a', then: 'done', else: 'balance' } }], '"route" is required for action balance'],
    ['a route on done', [{ ...ok, route: ['h'] }], 'rule 1 ("r"): "route" is only used by the actions relay and balance, and this rule can only done'],
    ['an empty route', [{ ...ok, action: 'relay', route: [] }], 'rule 1 ("r"): "route" must be a non-empty array of hosts, or of arrays of hosts, got []'],
    ['a route that is a string', [{ ...ok, action: 'relay', route: 'h' }], 'got "h"'],
    ['a host that is a number', [{ ...ok, action: 'relay', route: [3333] }], 'rule 1 ("r"): "route" hosts must be non-empty strings, got 3333'],
    ['a host with a path', [{ ...ok, action: 'relay', route: ['h/q/x'] }], 'rule 1 ("r"): "route" host "h/q/x" is not host, host:port or a URL http://<host>[:<port>][/<root>]/q/<queue>'],
    ['a host with a bad port', [{ ...ok, action: 'relay', route: ['h:port'] }], '"route" host "h:port" is not host, host:port'],
    [
      'a host named http…',
      [{ ...ok, action: 'relay', route: ['httpbin.org'] }],
      'rule 1 ("r"): "route" host "httpbin.org" starts with "http", so it must be a URL http://<host>[:<port>][/<root>]/q/<queue>: the copy\'s destination as it is (the relay delivers over http only)',
    ],
    ['an https URL', [{ ...ok, action: 'relay', route: ['https://h:3333/q/x'] }], '"route" host "https://h:3333/q/x" starts with "http", so it must be a URL http://'],
    ['a URL without /q/<queue>', [{ ...ok, action: 'balance', route: ['http://h:3333'] }], '"route" host "http://h:3333" starts with "http", so it must be a URL'],
    ['a URL of a host, with a slash', [{ ...ok, action: 'relay', route: ['http://h:3333/'] }], '"route" host "http://h:3333/" starts with "http"'],
    ['a URL of a message', [{ ...ok, action: 'relay', route: ['http://h/q/x/20261121.0527.42.578.1'] }], '"route" host "http://h/q/x/20261121.0527.42.578.1" starts with "http"'],
    ['a URL with a query', [{ ...ok, action: 'relay', route: ['http://h/q/x?a=1'] }], '"route" host "http://h/q/x?a=1" starts with "http"'],
    ['a URL with credentials', [{ ...ok, action: 'relay', route: ['http://u:p@h/q/x'] }], '"route" host "http://u:p@h/q/x" starts with "http"'],
    ['a URL with no host', [{ ...ok, action: 'relay', route: ['http:///q/x'] }], '"route" host "http:///q/x" starts with "http"'],
    ['a URL with an empty queue', [{ ...ok, action: 'relay', route: ['http://h/q/'] }], 'rule 1 ("r"): "route" host "http://h/q/" does not end in a valid queue name after /q/, got ""'],
    ['a URL with a bad queue name', [{ ...ok, action: 'relay', route: ['http://h/q/.b'] }], '"route" host "http://h/q/.b" does not end in a valid queue name after /q/, got ".b"'],
    ['hosts mixed with groups', [{ ...ok, action: 'relay', route: ['a', ['b']] }], 'rule 1 ("r"): "route" must be all hosts or all arrays of hosts, not a mix'],
    ['an empty group', [{ ...ok, action: 'relay', route: [['a'], []] }], 'rule 1 ("r"): "route" has an empty array of hosts'],
    ['groups for balance', [{ ...ok, action: 'balance', route: [['a'], ['b']] }], 'rule 1 ("r"): "route" with arrays of hosts is for relay only'],
    ['a bad host in a group', [{ ...ok, action: 'relay', route: [['a', '']] }], '"route" hosts must be non-empty strings, got ""'],
  ])('%s', (_what, rules, expected) => {
    expect(problem(rules).message).toContain(expected);
  });

  it('text that is not JSON', () => {
    expect(() => parseRules('[{"name": "r",}]', {})).toThrow(/^not valid JSON: /);
  });

  it('says a mistake on one line, even where the JSON or a pattern has newlines', () => {
    // Node quotes the text around the mistake, the newline in it too.
    expect(() => parseRules('[{"name": "r",\n"dest"}]', {})).toThrow(/^not valid JSON: [^\n]*"r", "dest"}][^\n]*$/);
    expect(problem([{ name: 'r', action: 'done', dest: 'a\n(' }]).message).toBe(
      'rule 1 ("r"): "dest" is not a valid regular expression: Invalid regular expression: /a (/: Unterminated group',
    );
  });
});

describe('accepted hosts', () => {
  it.each(['h', 'h.example.com:4000', '[::1]', '[::1]:3333', 'http://h.example.com:5000/q/box_que', 'http://h/rq/q/box_que', 'http://[::1]:3333/a/b/q/x-y_z'])('%s', (host) => {
    expect(parse([{ name: 'r', action: 'relay', dest: 'x', route: [host] }])[0]!.route).toEqual([host]);
  });
});

describe('RQ’s Ruby rules', () => {
  const NOT_READ = "RQ's Ruby rules are not read; rq's rules are JSON in config/rq_router_rules.json (docs/router.md)";

  it('are refused with a pointer to the JSON form, by their text', () => {
    expect(() => parseRules('rule "stats"\naction :relay\ndest /^stats/\nroute "h1"\n\n', {})).toThrow(new RqError('RQ_CONFIG', NOT_READ));
    expect(() => parseRules('#rule "old"\n\nrule "default"\naction :err\n', {})).toThrow(NOT_READ);
  });

  it('and by a file name ending in .rb, named in the message', () => {
    expect(() => loadRules('/opt/rq/config/rq_router_rules.rb', {})).toThrow(`/opt/rq/config/rq_router_rules.rb: ${NOT_READ}`);
  });

  it('in config/ without the JSON file give a warning', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rq-rules-'));
    try {
      expect(rubyRulesWarning(dir)).toBeUndefined();
      fs.writeFileSync(path.join(dir, 'rq_router_rules.rb'), 'rule "default"\naction :err\n\n');
      expect(rubyRulesWarning(dir)).toBe(`${dir}/rq_router_rules.rb is ignored, so this host is not in router mode: ${NOT_READ}`);
      fs.writeFileSync(path.join(dir, 'rq_router_rules.json'), '[]');
      expect(rubyRulesWarning(dir)).toBeUndefined();
    } finally {
      fs.rmSync(dir, { recursive: true });
    }
  });
});

describe('loadRules', () => {
  it('names the file in every error, a missing file too', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rq-rules-'));
    try {
      const file = path.join(dir, 'rq_router_rules.json');
      expect(() => loadRules(file, {})).toThrow(`${file}: cannot read the rules file: ENOENT`);
      fs.writeFileSync(file, JSON.stringify([{ name: 'r', action: 'done' }]));
      expect(() => loadRules(file, {})).toThrow(`${file}: rule 1 ("r"): needs "src" or "dest"`);
      fs.writeFileSync(file, JSON.stringify(GOOD));
      expect(loadRules(file, { BR_ENV: 'prod' })[3]!.action).toBe('relay');
    } finally {
      fs.rmSync(dir, { recursive: true });
    }
  });
});

describe('matchRule', () => {
  const rules = parse([
    { name: 'both', action: 'done', src: '^web', dest: 'stats' },
    { name: 'by src', action: 'done', src: 'cron' },
    { name: 'by dest', action: 'done', dest: '^box_' },
  ]);
  const name = (msg: Record<string, unknown>): string => matchRule(rules, msg).name;

  it('takes the first rule whose patterns all match, anywhere in the field', () => {
    expect(name({ src: 'web1', dest: 'stats' })).toBe('both');
    expect(name({ src: 'web1', dest: 'box_a' })).toBe('by dest');
    expect(name({ src: 'nightly-cron', dest: 'box_a' })).toBe('by src');
    expect(name({ src: 'x', dest: 'http://h:3333/q/old_stats' })).toBe('default');
  });

  it('does not match a pattern against a missing or non-string field', () => {
    expect(name({ dest: 'stats' })).toBe('default');
    expect(name({ src: null, dest: 'box_a' })).toBe('by dest');
    expect(name({ src: 5, dest: 5 })).toBe('default');
  });

  it('falls through to the file’s own default', () => {
    expect(matchRule(parse(GOOD), { dest: 'nothing matches' }).action).toBe('done');
  });
});

describe('selectHosts', () => {
  const rules = parse(GOOD);
  const first = (): number => 0;
  const last = (n: number): number => n - 1;

  it('relay with plain hosts: all of them', () => {
    expect(selectHosts(rules[0]!, first)).toEqual(['stats1.example.com', 'stats2.example.com:3334']);
  });

  it('relay with groups: one host of each group, as the random source picks', () => {
    expect(selectHosts(rules[1]!, first)).toEqual(['logbox-a1.example.com', 'logbox-b1.example.com']);
    expect(selectHosts(rules[1]!, last)).toEqual(['logbox-a2.example.com', 'logbox-b2.example.com']);
  });

  it('balance: one host', () => {
    expect(selectHosts(rules[2]!, first)).toEqual(['worker1.example.com']);
    expect(selectHosts(rules[2]!, last)).toEqual(['worker2.example.com']);
  });

  it('no route: no hosts', () => {
    expect(selectHosts(rules[4]!, first)).toEqual([]);
  });

  it('uses Math.random when no source is given', () => {
    for (let i = 0; i < 20; i++) expect(['worker1.example.com', 'worker2.example.com']).toContain(selectHosts(rules[2]!)[0]);
  });
});

describe('transformDest', () => {
  it('the examples of RQ’s router', () => {
    expect(transformDest('http://oldhost.btrll.com/q/box_que', 'brxlog-be-halb02.btrll.com')).toBe('http://brxlog-be-halb02.btrll.com:3333/q/box_que');
    expect(transformDest('ftp_cleaner', 'stats2.btrll.com')).toBe('http://stats2.btrll.com:3333/q/ftp_cleaner');
  });

  it('keeps a port, uses an http host as it is, and takes the queue of a /q/ path', () => {
    expect(transformDest('box_que', 'h:4000')).toBe('http://h:4000/q/box_que');
    expect(transformDest('box_que', 'http://other:1/q/elsewhere')).toBe('http://other:1/q/elsewhere');
    expect(transformDest('https://old/root/q/box_que', 'h')).toBe('http://h:3333/q/box_que');
    expect(transformDest('/q/box_que', 'h')).toBe('http://h:3333/q/box_que');
    expect(transformDest('box_que', '[::1]')).toBe('http://[::1]:3333/q/box_que');
    expect(transformDest('box_que', '[::1]:4000')).toBe('http://[::1]:4000/q/box_que');
  });
});
