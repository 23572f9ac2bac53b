import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Vitest's default is one worker fewer than the cores: one on the 2-core CI machines, where
    // the files then ran one after another (some 640 s). Most of a test's time is spent waiting
    // on the processes and servers it started, so two files run at once on 2 cores (some 400 s),
    // at most four on bigger machines (each file may start daemons of its own).
    maxWorkers: Math.min(4, Math.max(2, availableParallelism())),
    globalSetup: ['test/support/temp-root.ts'],
  },
});
