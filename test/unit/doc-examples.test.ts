/**
 * The docs' example runner reads examples and compares output as the docs' contract says
 * (docs/development.md, "Runnable examples"): commands, heredocs and continuation lines,
 * `…` within a line and on a line of its own, ids and times matched loosely, ports mapped.
 */
import { describe, expect, it } from 'vitest';
import { outputMatches, parseExamples, withPorts } from '../helpers/doc-examples.js';

describe('parseExamples', () => {
  it('reads commands, heredocs, continued lines and expected output from console blocks only', () => {
    const md = [
      '```sh',
      '$ not run',
      '```',
      '```console',
      "$ cat > a.sh <<'EOF'",
      'echo hi',
      'EOF',
      '$ bin/rq sendmesg \\',
      '    --dest hello',
      'ok http://127.0.0.1:3333/q/hello/20261121.0527.42.578.2581651',
      '',
      '$ bin/rq statusmesg --msg_id $ID   # after a moment',
      'ok done',
      '```',
    ].join('\n');
    const commands = parseExamples(md, 'x.md');
    expect(commands.map((c) => [c.command, c.expected, c.retry, c.where])).toEqual([
      ["cat > a.sh <<'EOF'\necho hi\nEOF", [], false, 'x.md:5'],
      ['bin/rq sendmesg \\\n    --dest hello', ['ok http://127.0.0.1:3333/q/hello/20261121.0527.42.578.2581651'], false, 'x.md:8'],
      ['bin/rq statusmesg --msg_id $ID   # after a moment', ['ok done'], true, 'x.md:12'],
    ]);
  });
});

describe('outputMatches', () => {
  it('matches ids, dates and times loosely, and … within a line', () => {
    expect(outputMatches(['ok http://h/q/a/20261127.1417.05.288.2523651'], ['ok http://h/q/a/20261121.0527.42.578.2581651'])).toBe(true);
    expect(outputMatches(['at 2026-11-27T14:17:05.123Z pid 42'], ['at 2026-11-21T05:27:42Z pid …'])).toBe(true);
    expect(outputMatches(['ok done - greeted nobody'], ['ok done - greeted world'])).toBe(false);
    expect(outputMatches(['a.b'], ['a?b'])).toBe(false);
  });

  it('lets a line of … stand for any number of lines, and nothing else', () => {
    expect(outputMatches(['first', 'x', 'y', 'last'], ['first', '…', 'last'])).toBe(true);
    expect(outputMatches(['first', 'last'], ['first', '…', 'last'])).toBe(true);
    expect(outputMatches(['first', 'last', 'more'], ['first', 'last'])).toBe(false);
    expect(outputMatches(['first'], ['first', 'last'])).toBe(false);
  });
});

describe('withPorts', () => {
  it('maps the docs’ default ports, as whole numbers only', () => {
    const ports = new Map([[3333, 41000]]);
    expect(withPorts('curl http://127.0.0.1:3333/ 33333 3333', ports)).toBe('curl http://127.0.0.1:41000/ 33333 41000');
  });
});
