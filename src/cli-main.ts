/**
 * The CLI as bundled (dist/bundle/cli.js; cli.ts loads it). For `run`, the encode workers are started
 * first, so that their module loading overlaps the main thread's (on 2 cores it took a quarter
 * of a second off the start of a run); then the commands load (cli-commands.ts).
 */
import { prewarmEncodeWorkers, defaultEncodeWorkers } from './pipeline/encode-worker-prewarm.js';
import { capYoungGeneration } from './core/young-generation.js';
import { optimizeOnOwnThread } from './core/optimizing-compiler.js';

// (before anything allocates much: the young generation capped, core/young-generation.ts)
capYoungGeneration();
// (before the first worker: its optimizing compiles on its own thread, core/optimizing-compiler.ts)
optimizeOnOwnThread();
if (process.argv[2] === 'run') prewarmEncodeWorkers(defaultEncodeWorkers());
await import('./cli-commands.js');
