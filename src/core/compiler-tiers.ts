/**
 * Which of V8's compilers the daemon's code goes through, and on which thread: the optimizing
 * compiler (TurboFan) on the thread whose code it optimizes (`--no-concurrent-recompilation`),
 * and no baseline compiler (Sparkplug: `--no-sparkplug`), so code goes from the interpreter
 * straight to TurboFan.
 *
 * Why (docs/performance.md, `run --once` on the bench corpus, Node 20, medians):
 *
 * - Each optimizing compile allocates its working memory with malloc on whichever of V8's four
 *   background threads runs it, and glibc gives each of those threads an arena of its own, which
 *   keeps what a compile freed: the most variable part of the peak RSS. With the flag on the node
 *   command line the run peaked at 116 instead of 128 MB (Node 24: 142 instead of 163), CPU the
 *   same; wall the same on Node 20, and on Node 24, as set here, 5-7 % longer (its mid-tier
 *   compiler, Maglev, moves onto the worker's thread as well, and the bench's short run waits on
 *   that thread).
 * - Sparkplug compiles every function run more than a few times to machine code; without it the
 *   peak was 119 instead of 123 MB and CPU no worse (what runs hot is optimized by TurboFan
 *   either way).
 *
 * V8 reads the first once per isolate, when the isolate is created: set here at run time, it
 * reaches the isolates created later (the encode and lookup workers), not the main thread's,
 * which only the command line reaches (the image's ENTRYPOINT has it: `node
 * --no-concurrent-recompilation dist/cli.js`). The second it reads at every tier-up, in every
 * isolate: from here on no function of any thread is baseline-compiled.
 *
 * An operator who gives either form of a flag on the node command line keeps their choice (Node
 * takes neither in NODE_OPTIONS).
 */
import v8 from 'node:v8';

/** The V8 flags, each as set here; the name after `--no-` is what an operator may set either way. */
export const COMPILER_FLAGS = ['--no-concurrent-recompilation', '--no-sparkplug'] as const;

/** Whether the node command line gave the flag named (either form; V8 takes dashes or underscores). */
function operatorChose(flag: string): boolean {
  const name = flag.replace(/^--no-/, '').replace(/[-_]/g, '[-_]');
  const pattern = new RegExp(`^--(no[-_])?${name}$`);
  return process.execArgv.some((a) => pattern.test(a));
}

/** From now on, in every isolate created and for every tier-up, the flags above unless the command line chose. */
export function configureCompilerTiers(): void {
  for (const flag of COMPILER_FLAGS) if (!operatorChose(flag)) v8.setFlagsFromString(flag);
}
