/**
 * The host names a browser may call rq's listeners by (main-config.ts browserHostNames):
 * the fixed local names, the configured ones and the allowed_hosts, lower case and
 * without port, and never an address that means "every interface" (a browser takes
 * http://0.0.0.0/ for this host, so a page could reach rq by it).
 */
import { describe, expect, it } from 'vitest';
import { browserHostNames, parseMainConfig } from '../../src/domain/main-config.js';

describe('browserHostNames', () => {
  it('holds the local names, host, addr, a door addr and allowed_hosts, lower case, IPv6 in brackets', () => {
    const config = parseMainConfig(JSON.stringify({ host: 'RQ1.example.com', addr: '::1', allowed_hosts: ['Alias.Example'] }));
    expect([...browserHostNames(config, '127.0.0.2')].sort()).toEqual(['127.0.0.1', '127.0.0.2', '[::1]', 'alias.example', 'localhost', 'rq1.example.com']);
  });

  it('leaves out the unspecified addresses rq may listen on', () => {
    for (const addr of ['0.0.0.0', '::', '[::]']) {
      const names = browserHostNames(parseMainConfig(JSON.stringify({ host: 'rq1', addr })), addr);
      expect([...names].sort(), addr).toEqual(['127.0.0.1', '[::1]', 'localhost', 'rq1']);
    }
  });
});
