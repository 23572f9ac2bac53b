#!/usr/bin/env node
/**
 * tableau-activity-otel: the command-line entry point (the package's binary). It runs the build's
 * bundle of the CLI (`dist/bundle/`, written by `npm run build` from cli-main.ts; see
 * scripts/bundle.mjs): loading the daemon's modules from one bundle instead of some 500 files
 * took about a tenth of a second off every start.
 */
import { setFlagsFromString } from 'node:v8';

/**
 * V8 set to favour memory over speed (`--optimize-for-size`), before anything else is loaded and
 * before the encode workers start (it is process-wide): its collector then runs sooner and keeps
 * the heaps near what is live. Most of a run's peak RSS was garbage waiting for the main thread's
 * next collection: the decompressed buffers the reader hands on (copied into the workers' shared
 * buffers, then dead) and the file reads. About 40 MB less peak RSS on the bench corpus for a few
 * percent of wall time (docs/performance.md, "Efficiency"). `node --no-optimize-for-size
 * dist/cli.js …` keeps V8's default.
 */
if (!process.execArgv.some((a) => /^--(no-)?optimize[-_]for[-_]size/.test(a))) setFlagsFromString('--optimize-for-size');

const BUNDLED_ENTRY = './bundle/cli.js';
await import(BUNDLED_ENTRY);
