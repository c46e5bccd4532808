/**
 * The rq-mgr daemon: `node dist/src/supervisor/rq-mgr-main.js`, which `bin/rq-mgr start`
 * spawns detached, with stdout and stderr on `log/rq.log`. What it does is
 * runSupervisor's (run-supervisor.ts), which `bin/rq-mgr run` calls in the foreground.
 */
import { installRoot } from '../lib/install-root.js';
import { rootLayout } from '../store/layout.js';
import { runSupervisor } from './run-supervisor.js';

await runSupervisor(rootLayout(installRoot()), { foreground: false });
