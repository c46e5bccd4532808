#!/usr/bin/env node
// bin/rq: RQ's command line (src/cli/rq.ts); `bin/rq` is a symlink to this file. Every call
// pays Node's start-up, so this file keeps what comes after it small (the figures are in
// docs/internals/performance.md, "CLI startup"):
// - its real path ends in `.cjs`, so Node loads it as CommonJS, without the ES module
//   loader (about 4 ms);
// - it loads one file, dist/src/cli/rq.cjs: `npm run build` bundles the CLI with every
//   module it imports into it, instead of 17 ES modules (about 12 ms);
// - it compiles that file with the V8 code cache `npm run build` wrote beside it
//   (writeCodeCache), so V8 parses and compiles none of it (about 1.5 ms). A cache V8 rejects (another Node, another build) is ignored: the call then
//   compiles the bundle, as without one. Nothing is written at run time.
// It works through a further symlink and from any cwd; the install root is RQ_ROOT, else
// the package this file belongs to.
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const vm = require('node:vm');

const BUNDLE = path.join(__dirname, '../dist/src/cli/rq.cjs');
const CACHE = `${BUNDLE}.cache`;

/** The bundle as a CommonJS module's function, compiled with `cachedData` when it is given. */
function compile(cachedData) {
  const source = `(function (exports, require, module, __filename, __dirname) {${fs.readFileSync(BUNDLE, 'utf8')}\n})`;
  return new vm.Script(source, { filename: BUNDLE, cachedData });
}

/** Write the code cache, every function compiled now (not only the top level) so that a call compiles nothing. */
function writeCodeCache() {
  const v8 = require('node:v8');
  v8.setFlagsFromString('--no-lazy');
  const script = compile(undefined);
  v8.setFlagsFromString('--lazy');
  fs.writeFileSync(CACHE, script.createCachedData());
}

if (require.main === module) {
  let cachedData;
  try {
    cachedData = fs.readFileSync(CACHE);
  } catch {
    // no cache: V8 compiles the bundle
  }
  const bundle = { exports: {} };
  compile(cachedData).runInThisContext()(bundle.exports, require, bundle, BUNDLE, path.dirname(BUNDLE));
  bundle.exports.main(process.argv.slice(2)).then((code) => {
    process.exitCode = code;
  });
} else {
  // `npm run build`: node -e "require('./bin/rq.cjs').writeCodeCache()"
  module.exports = { writeCodeCache };
}
