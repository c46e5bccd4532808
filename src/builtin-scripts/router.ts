/**
 * The worker of the built-in `rq_router` queue (docs/router.md), run by
 * `libexec/rq_router_script` once per message: load the rules (src/router/rules.ts), take
 * the first rule that matches the message, log it, wait its delay, then finish it as the
 * rule says: `done`, `err`, or copies of the message sent on with `dup` (to the `relay`
 * queue, since every routed destination is a URL): one host for `balance`, every
 * selected host for `relay`.
 *
 * A rules file that is missing or invalid takes the queue DOWN: the worker writes
 * `config/rq_router.down` explaining what is wrong and how to recover (and that RQ's
 * `rq_router_rules.rb` is not read, if that is there instead), reports
 * `err Bad rule file at: <path>` and exits 1, so no more messages run until an operator
 * has fixed the file and removed the flag. A message that a `relay` or `balance` rule
 * matches but that has no `dest` ends in `err`, as there is no queue to send it to. A
 * message still routing after 60 s is given up (exit 2).
 */
import fs from 'node:fs';
import path from 'node:path';
import { explain } from '../domain/errors.js';
import { fieldText } from '../domain/message.js';
import { installRoot } from '../lib/install-root.js';
import { localTimestamp } from '../lib/local-time.js';
import { ROUTER_LIMIT_SECS, RULES_FILE_NAME, loadRules, matchRule, rubyRulesWarning, selectHosts, transformDest, type Rule } from '../router/rules.js';
import { queueLayout, rootLayout, type RootLayout } from '../store/layout.js';
import { log, readOwnMessage, requestAsync, rqEnv, say } from './worker-io.js';

/** What `config/rq_router.down` says: RQ's text first, then what is wrong and how to recover. */
function downText(root: RootLayout, file: string, problem: string): string {
  return [
    'bad rules file',
    problem,
    '',
    'The rq_router queue is DOWN: it runs no message until this file is removed.',
    `Check the fixed rules with: bin/rq verify_rules --path ${file}`,
    `then remove this file (rm ${queueLayout(root, 'rq_router').downFlag}) and clone the messages in err.`,
    '',
  ].join('\n');
}

/** `<pid> - <time> - <rule> - <action> - <msg_id> - <src>` in `log/rq_router.log`. */
function logRoute(root: RootLayout, rule: Rule, msg: Record<string, unknown>): void {
  const logDir = path.dirname(root.logFile);
  fs.mkdirSync(logDir, { recursive: true });
  const line = `${process.pid} - ${localTimestamp(new Date())} - ${rule.name} - ${rule.action} - ${rqEnv('MSG_ID')} - ${fieldText(msg['src'])}\n`;
  fs.appendFileSync(path.join(logDir, 'rq_router.log'), line);
}

/** A `dup` to `dest`: the new full id, or the reason it failed. */
async function dup(dest: string): Promise<{ id: string } | { reason: string }> {
  const reply = await requestAsync(`dup 0-X-${dest}`);
  const [word, ...rest] = reply.split(' ');
  if (word === 'ok') return { id: rest.join(' ') };
  return { reason: reply === '' ? 'no reply from the queue' : word === 'fail' ? rest.join(' ') : reply };
}

/** Route the message of this run; resolves to the exit status. */
export async function main(): Promise<number> {
  setTimeout(() => {
    say(`err router gave up after ${ROUTER_LIMIT_SECS} seconds`);
    process.exit(2);
  }, ROUTER_LIMIT_SECS * 1000).unref();

  const root = rootLayout(installRoot());
  const file = path.join(root.configDir, RULES_FILE_NAME);
  let rules: Rule[];
  try {
    rules = loadRules(file, process.env);
  } catch (e) {
    const problem = [explain(e), rubyRulesWarning(root.configDir)].filter(Boolean).join('\n');
    log(problem);
    fs.writeFileSync(queueLayout(root, 'rq_router').downFlag, downText(root, file, problem));
    say(`err Bad rule file at: ${file}`);
    return 1;
  }

  const msg = readOwnMessage();
  const rule = matchRule(rules, msg);
  log(`rule ${JSON.stringify(rule.name)} matched: ${rule.action}`);
  if (rule.log) logRoute(root, rule, msg);
  const dest = fieldText(msg['dest']);
  if ((rule.action === 'balance' || rule.action === 'relay') && dest.trim() === '') {
    say('err message has no dest to route');
    return 1;
  }
  if (rule.delay > 0) {
    say(`run router delay ${rule.delay} seconds`);
    await new Promise((resolve) => setTimeout(resolve, rule.delay * 1000));
  }

  switch (rule.action) {
    case 'done':
      say('done router processed a done');
      return 0;
    case 'err':
      say('err router processed an err');
      return 1;
    case 'balance': {
      const [host] = selectHosts(rule);
      const result = await dup(transformDest(dest, host!));
      if ('reason' in result) {
        say(`err DUP failed - ${result.reason}`);
        return 1;
      }
      say(`done DUP to ${result.id}`);
      return 0;
    }
    case 'relay': {
      const hosts = selectHosts(rule);
      for (const host of hosts) {
        const result = await dup(transformDest(dest, host));
        if ('reason' in result) {
          say(`err DUP relay failed - ${result.reason}`);
          return 1;
        }
        say(`run DUP relay to ${result.id}`);
      }
      say(`done done relay of ${hosts.length} messages`);
      return 0;
    }
  }
}
