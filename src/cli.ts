#!/usr/bin/env node
/**
 * tableau-activity-otel: the command-line entry point (the package's binary). It runs the build's
 * bundle of the CLI (`dist/bundle/`, written by `npm run build` from cli-main.ts; see
 * scripts/bundle.mjs): loading the daemon's modules from one bundle instead of some 500 files
 * took about a tenth of a second off every start.
 */
const BUNDLED_ENTRY = './bundle/cli.js';
await import(BUNDLED_ENTRY);
