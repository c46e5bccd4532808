/**
 * Byte counts for people: binary units (KiB = 1024 bytes), one decimal from KiB on, as
 * `du -h` and `ls -lh` print them. Pages and the cleaner's log use it; JSON replies
 * carry exact byte counts.
 */
const UNITS = ['KiB', 'MiB', 'GiB', 'TiB', 'PiB'] as const;

/** `512 B`, `1.5 KiB`, `10.0 GiB`. */
export function formatBytes(bytes: number): string {
  if (!Number.isFinite(bytes) || bytes < 1024) return `${Number.isFinite(bytes) ? Math.max(0, Math.round(bytes)) : 0} B`;
  let value = bytes / 1024;
  let unit = 0;
  // Compared as printed, so 1,048,575 bytes is `1.0 MiB`, not `1024.0 KiB`.
  while (Math.round(value * 10) / 10 >= 1024 && unit < UNITS.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value.toFixed(1)} ${UNITS[unit]}`;
}
