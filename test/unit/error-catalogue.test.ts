/**
 * docs/errors.md against the code: every code of ERROR_CODES has its entry, no entry or
 * row names a code that does not exist, and for each front door whose mapping is a table
 * in the code, the answer the page shows is the one the table gives (the web's status,
 * lmstfy's and Cloudq's status and error text, RQMS's status and phrase, Workq's reply,
 * bin/rq's exit status), in each entry and in the "At a glance" table.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { EXIT_CODES } from '../../src/cli/rq.js';
import { ERROR_CODES, type ErrorCode } from '../../src/domain/errors.js';
import { REPLY_OF as CLOUDQ } from '../../src/protocols/cloudq.js';
import { ERROR_REPLIES as LMSTFY } from '../../src/protocols/lmstfy-wire.js';
import { REPLIES as RQMS } from '../../src/protocols/rqms.js';
import { ERROR_REPLIES as WORKQ, OWN_TEXT } from '../../src/protocols/workq/answer.js';
import { HTTP_STATUS } from '../../src/web/web-errors.js';

const DOC = path.join(import.meta.dirname, '..', '..', 'docs', 'errors.md');
const CODES = Object.keys(ERROR_CODES) as ErrorCode[];
const DOORS = ['queue socket', 'web', 'lmstfy', 'Cloudq', 'RQMS', 'Workq', 'bin/rq'] as const;

/** The cells of a Markdown table row (`| a | b |`), or undefined for a line that is not one. */
function cells(line: string): string[] | undefined {
  if (!line.startsWith('|')) return undefined;
  // A `|` inside backticks would split a cell; the catalogue has none.
  return line.slice(1, line.endsWith('|') ? -1 : undefined).split('|').map((c) => c.trim());
}

/** The text of each `## <heading>` section, by heading. */
function sections(text: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  let lines: string[] | undefined;
  for (const line of text.split('\n')) {
    const heading = /^## (.+)$/.exec(line);
    if (heading) out.set(heading[1]!, (lines = []));
    else lines?.push(line);
  }
  return out;
}

/** An entry's door table: door → its answer cell. */
function doorRows(lines: string[]): Map<string, string> {
  const rows = new Map<string, string>();
  for (const line of lines) {
    const c = cells(line);
    if (c && c.length === 2 && c[0] !== 'door' && !c[0]!.startsWith('---')) rows.set(c[0]!, c[1]!);
  }
  return rows;
}

/** What the doc must show for `code` at each door whose mapping is a table in the code. */
function expected(code: ErrorCode): Record<string, { status?: string; text?: string }> {
  const workq = WORKQ[code];
  const rqms = RQMS[code];
  return {
    web: { status: String(HTTP_STATUS[code]) },
    // A full disk names the queue after the table's text: a prefix of the JSON is shown whole.
    lmstfy: { status: String(LMSTFY[code].status), text: JSON.stringify({ error: LMSTFY[code].error }).slice(0, -2) },
    Cloudq: { status: String(CLOUDQ[code].status), text: JSON.stringify(CLOUDQ[code].body).slice(0, -2) },
    RQMS: { status: String(rqms.status), text: rqms.phrase ?? "the method's own phrase" },
    Workq: { text: workq === OWN_TEXT ? '`-SERVER-ERROR ' : `\`${workq.toString('latin1').trimEnd()}` },
    'bin/rq': { text: `exit \`${EXIT_CODES[code]}\`` },
  };
}

/** The first backquoted HTTP status of a cell. */
function statusOf(cell: string): string | undefined {
  return /`(\d{3})\b/.exec(cell)?.[1];
}

const doc = fs.readFileSync(DOC, 'utf8');
const entries = sections(doc);

describe('docs/errors.md', () => {
  it('has an entry for every code of ERROR_CODES, and none for a code that does not exist', () => {
    const named = [...entries.keys()].filter((h) => /^RQ_/.test(h));
    expect(named.filter((h) => !Object.hasOwn(ERROR_CODES, h)), 'entries for codes that do not exist').toEqual([]);
    expect(CODES.filter((c) => !entries.has(c)), 'codes without an entry').toEqual([]);
  });

  it('names no code that does not exist, anywhere', () => {
    const unknown = [...new Set(doc.match(/\bRQ_[A-Z_]+\b/g) ?? [])].filter(
      (c) => !Object.hasOwn(ERROR_CODES, c) && !['RQ_WEB_BODY_BUDGET'].includes(c),
    );
    expect(unknown).toEqual([]);
  });

  describe.each(CODES)('%s', (code) => {
    it('shows each door the answer its table gives', () => {
      const rows = doorRows(entries.get(code) ?? []);
      expect([...rows.keys()]).toEqual([...DOORS]);
      for (const [door, want] of Object.entries(expected(code))) {
        const cell = rows.get(door)!;
        if (want.status !== undefined) expect(statusOf(cell), `${code}, ${door}: ${cell}`).toBe(want.status);
        if (want.text !== undefined) expect(cell, `${code}, ${door}`).toContain(want.text);
      }
    });
  });

  it('shows in the "At a glance" table the statuses and exits the tables give', () => {
    const glance = entries.get('At a glance') ?? [];
    const seen: string[] = [];
    for (const line of glance) {
      const c = cells(line);
      const code = c && /^\[(RQ_[A-Z_]+)\]\(#([a-z_]+)\)$/.exec(c[0]!);
      if (!c || !code) continue;
      const k = code[1] as ErrorCode;
      expect(code[2], 'the link is the entry\'s anchor').toBe(k.toLowerCase());
      seen.push(k);
      const workq = WORKQ[k];
      const workqWord = (workq === OWN_TEXT ? '-SERVER-ERROR' : workq.toString('latin1').trimEnd()).split(' ')[0];
      expect(c.slice(1), k).toEqual([
        String(HTTP_STATUS[k]),
        String(LMSTFY[k].status),
        String(CLOUDQ[k].status),
        String(RQMS[k].status),
        `\`${workqWord}\``,
        String(EXIT_CODES[k]),
      ]);
    }
    expect(seen).toEqual(CODES);
  });
});
