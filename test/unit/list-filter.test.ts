/**
 * The queue page's time fields (web/list-filter.ts): `from`/`to` as epoch seconds or a
 * local date-time, and the form showing an epoch given in the URL as the same minute.
 */
import { describe, expect, it } from 'vitest';
import { timeInput, timeParam } from '../../src/web/list-filter.js';

describe('list filter times', () => {
  it('reads epoch seconds and local date-times, and refuses anything else naming the field', () => {
    expect(timeParam('from', '1795000000')).toBe(1795000000);
    expect(timeParam('from', '2026-11-27T08:30')).toBe(Math.floor(new Date(2026, 10, 27, 8, 30).getTime() / 1000));
    expect(() => timeParam('to', '2026-02-30T10:00')).toThrow(/'to' must be a date-time/);
    expect(() => timeParam('from', 'yesterday')).toThrow(/'from' must be/);
  });

  it('shows an epoch from the URL in the date-time field as the same minute', () => {
    const shown = timeInput('1795000020');
    expect(shown).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d$/);
    expect(timeParam('from', shown)).toBe(1795000020 - (1795000020 % 60));
    expect(timeInput('2026-11-27T08:30')).toBe('2026-11-27T08:30');
  });
});
