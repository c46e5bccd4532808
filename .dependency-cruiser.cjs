// The layer rules of src/ (`npm run lint` runs `depcruise src bench` with this file):
// who may import whom, and no import cycles. Type-only imports count like any other
// (`tsPreCompilationDeps`): a front door that names a queue-internal type is coupled to
// it all the same. An import that does not resolve is an error too, so a rule can never
// pass because its target was not found.

/** Everything of ours; a rule's `to` is limited to it so Node's and npm's modules pass. */
const OURS = '^src/';

/**
 * The files of src/store/ that belong to the install, not to the message store, so any
 * process may import them:
 * - layout.ts: the paths of the install root and of a queue (where a socket or a config is);
 * - atomic.ts: durable whole-file writes, for configs and token files;
 * - config-files.ts: reading config/config.json and a queue config named by a client;
 * - secret-files.ts: the owner-only mode of the files that hold passwords and tokens;
 * - if-present.ts: filesystem reads for which absence is an answer;
 * - attachment-source.ts: the checks a file passes before it is attached (bin/rq runs them
 *   before it asks the queue).
 * The rest (message-store, que-index, group-commit, ext-ids, attachments, disk-usage) is
 * the message store: only the queue process and the store itself import it.
 */
const INSTALL_LEVEL_STORE = '^src/store/(layout|atomic|config-files|secret-files|if-present|attachment-source)[.]ts$';

/** The front doors: the web process, the pull protocols, the command lines, the built-in scripts. */
const FRONT_DOORS = '^src/(web|protocols|cli|builtin-scripts)/';

/**
 * TEMPORARY (issue 20): the violations main has today, each with the file that imports and
 * what it may still import. The work of issue 20 removes them; the lead empties this list
 * at merge, and after that it stays empty: a new violation is fixed, not listed.
 */
const TEMPORARY_EXCEPTIONS = [];

/** Escape a file path for a regular expression anchored on it. */
const exactly = (file) => `^${file.replace(/[.]/g, '[.]')}$`;

/** TEMPORARY (issue 20), like the list above: the import cycles main has today, each by its files. */
const TEMPORARY_CYCLES = [];

/** The rule that the folder src/<layer> imports, of ours, only the folders `allowed`. */
const onlyFrom = (layer, allowed, comment, alsoAllowed = []) => ({
  name: `${layer}-imports-only-${allowed.join('-')}`,
  comment,
  from: { path: `^src/${layer}/` },
  to: { path: OURS, pathNot: [`^src/(${allowed.join('|')})/`, ...alsoAllowed] },
});

/** The layer rules, before the temporary exceptions are applied. */
const layers = [
  {
    name: 'no-cycles',
    comment: 'No import cycle anywhere: each module can be read knowing only what it imports.',
    from: { path: '^(src|bench)/' },
    to: { circular: true, ...(TEMPORARY_CYCLES.length > 0 && { via: { pathNot: TEMPORARY_CYCLES.flat().map(exactly).join('|') } }) },
  },
  onlyFrom('domain', ['domain'], 'src/domain (states, ids, messages, configs, errors) is pure: it imports nothing of ours but itself.'),
  onlyFrom('lib', ['lib', 'domain'], 'src/lib holds the helpers every process uses.'),
  onlyFrom('store', ['store', 'domain', 'lib'], 'src/store is the filesystem database, under the queue.'),
  onlyFrom('rpc', ['rpc', 'domain', 'lib'], "src/rpc holds RQ's framing, the socket server and the command map, under both ends."),
  {
    name: 'spawn-not-above',
    comment: 'src/spawn (running scripts) knows nothing of the queue, the web, the protocols or the command lines.',
    from: { path: '^src/spawn/' },
    to: { path: '^src/(queue|web|protocols|cli)/' },
  },
  {
    name: 'queue-not-front-doors',
    comment: 'The queue process serves the front doors and the supervisor; it does not import them. (It may use src/client: a dup or a webhook sends a message to another queue.)',
    from: { path: '^src/queue/' },
    to: { path: '^src/(web|protocols|cli|supervisor)/' },
  },
  onlyFrom('client', ['client', 'rpc', 'domain', 'lib'], 'src/client is the typed client of the queues, under the front doors (it finds their sockets by the install layout).', [INSTALL_LEVEL_STORE]),
  {
    name: 'front-door-not-queue',
    comment: "A front door reaches a queue through src/client only, never the queue process's modules (types included).",
    from: { path: FRONT_DOORS },
    to: { path: '^src/queue/' },
  },
  {
    name: 'front-door-not-message-store',
    comment: 'A front door does not read or write messages on disk: only install-level files of src/store (see INSTALL_LEVEL_STORE).',
    from: { path: FRONT_DOORS, pathNot: '^src/builtin-scripts/' },
    to: { path: '^src/store/', pathNot: INSTALL_LEVEL_STORE },
  },
  {
    name: 'script-not-message-store',
    comment: "A built-in queue's script is a worker like any other: besides the install-level files, it may read its own message's attachments, by the one rule of what an attachment is (the relay sends them on).",
    from: { path: '^src/builtin-scripts/' },
    to: { path: '^src/store/', pathNot: [INSTALL_LEVEL_STORE, '^src/store/attachments[.]ts$'] },
  },
];

/**
 * Each rule, with its temporarily excepted files left out, and for each such file the same
 * rule again, minus the targets that file still imports today.
 */
const withExceptions = (rule) => {
  const own = TEMPORARY_EXCEPTIONS.filter((x) => x.rule === rule.name);
  if (own.length === 0) return [rule];
  const files = [...new Set(own.map((x) => x.from))];
  const narrowed = files.map((file) => ({
    ...rule,
    from: { path: exactly(file) },
    to: { ...rule.to, pathNot: [rule.to.pathNot ?? [], own.filter((x) => x.from === file).map((x) => x.to)].flat() },
  }));
  return [{ ...rule, from: { ...rule.from, pathNot: files.map(exactly) } }, ...narrowed];
};

module.exports = {
  forbidden: [
    ...layers.map((r) => ({ severity: 'error', ...r })).flatMap(withExceptions),
    {
      name: 'resolvable',
      comment: 'Every import resolves (else the rules above could not see where it goes).',
      severity: 'error',
      from: {},
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      extensions: ['.ts', '.js'],
    },
  },
};
