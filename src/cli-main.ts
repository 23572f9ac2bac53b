/**
 * The CLI as bundled (dist/bundle/cli.js; cli.ts loads it). For `run`, the encode workers are started
 * first, so that their module loading overlaps the main thread's (on 2 cores it took a quarter
 * of a second off the start of a run); then the commands load (cli-commands.ts).
 */
import { prewarmEncodeWorkers, defaultEncodeWorkers } from './pipeline/encode-worker-prewarm.js';
import { capYoungGeneration } from './core/young-generation.js';
import { configureCompilerTiers } from './core/compiler-tiers.js';

// (before anything allocates much: the young generation capped, core/young-generation.ts)
capYoungGeneration();
// (before the first worker: V8's compilers, core/compiler-tiers.ts)
configureCompilerTiers();
if (process.argv[2] === 'run') prewarmEncodeWorkers(defaultEncodeWorkers());
await import('./cli-commands.js');
