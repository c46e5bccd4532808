/**
 * The Workq replies, as the bytes sent: the fixed ones (`+OK`,
 * `-TIMEOUT`, `-NOT-FOUND`), the error lines, and the encoders of a leased job, a result
 * and an inspect listing, with the time format they use. Nothing here decides which reply
 * a command gets: the handlers and the decoder do.
 */
const CRLF = Buffer.from('\r\n');

export const OK = Buffer.from('+OK\r\n');
export const TIMEOUT = Buffer.from('-TIMEOUT\r\n');
export const NOT_FOUND = Buffer.from('-NOT-FOUND\r\n');

export function clientError(text: string): Buffer {
  return Buffer.from(`-CLIENT-ERROR ${text}\r\n`);
}

export function serverError(text: string): Buffer {
  return Buffer.from(`-SERVER-ERROR ${text}\r\n`);
}

/** `+OK 1\r\n<id> <name> <ttr> <payload-size>\r\n<payload>\r\n`. */
export function leaseReply(id: string, name: string, ttrMs: number, payload: Buffer): Buffer {
  return Buffer.concat([Buffer.from(`+OK 1\r\n${id} ${name} ${ttrMs} ${payload.length}\r\n`), payload, CRLF]);
}

/** `+OK 1\r\n<id> <1|0> <result-size>\r\n<result>\r\n`. */
export function resultReply(id: string, success: boolean, result: Buffer): Buffer {
  return Buffer.concat([Buffer.from(`+OK 1\r\n${id} ${success ? 1 : 0} ${result.length}\r\n`), result, CRLF]);
}

/** +OK <n>\r\n then per record `<label> <key-count>\r\n` and `<key> <value>\r\n` lines (a Buffer value is written raw). */
export function inspectReply(records: ReadonlyArray<{ label: string; pairs: ReadonlyArray<readonly [string, string | number | Buffer]> }>): Buffer {
  const parts: Buffer[] = [Buffer.from(`+OK ${records.length}\r\n`)];
  for (const { label, pairs } of records) {
    parts.push(Buffer.from(`${label} ${pairs.length}\r\n`));
    for (const [key, value] of pairs) {
      if (Buffer.isBuffer(value)) parts.push(Buffer.from(`${key} `), value, CRLF);
      else parts.push(Buffer.from(`${key} ${value}\r\n`));
    }
  }
  return Buffer.concat(parts);
}

/** `YYYY-MM-DDTHH:MM:SSZ` of an epoch-ms instant (whole seconds, UTC), for `created`, `time`, `started`. */
export function workqTime(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}
