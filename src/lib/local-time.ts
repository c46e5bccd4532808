/**
 * Times as RQ prints them for people: the server's local time with its UTC offset, as
 * Ruby's `Time#to_s` writes it. Used by the start marker in `stdio.log`, the log lines of
 * rq's own workers, and the schedule times on the dashboard.
 */

/** `2026-11-21 05:27:44 +0000`, local time, as in RQ's start marker. */
export function localTimestamp(at: Date): string {
  const p = (n: number): string => String(n).padStart(2, '0');
  const off = -at.getTimezoneOffset();
  const sign = off >= 0 ? '+' : '-';
  return (
    `${at.getFullYear()}-${p(at.getMonth() + 1)}-${p(at.getDate())} ` +
    `${p(at.getHours())}:${p(at.getMinutes())}:${p(at.getSeconds())} ` +
    `${sign}${p(Math.floor(Math.abs(off) / 60))}${p(Math.abs(off) % 60)}`
  );
}
