// @ts-check
/**
 * Last step of `npm run build`: bundles the compiled CLI (dist/cli-main.js) and the encode
 * worker (dist/pipeline/encode-worker.js) with their dependencies into dist/bundle/, which
 * dist/cli.js runs. Node 20 loads an ES module graph file by file (resolution, reads, linking):
 * for the CLI that was some 500 files and about 0.45 s of every start on the bench machine;
 * from the bundle it is a handful.
 *
 * - ES modules with code splitting: what is imported dynamically (the S3/SQS/TCM sources, the
 *   commands) stays in its own chunk and loads only when used, and the CLI and the worker
 *   share chunks rather than copies.
 * - The AWS SDK stays outside (it loads, lazily, from node_modules only for s3/s3-sqs sources),
 *   as do OpenTelemetry JS's serializer and resources (required lazily for OTLP JSON), and
 *   google-auth-library (google-secops only; bundled, gaxios' lazy import of its proxy agent
 *   breaks: "HttpsProxyAgent is not a constructor" as soon as HTTPS_PROXY is set).
 * - Every file lands in dist/bundle/, two levels below the package root like the compiled
 *   modules, so paths the code derives from its own location (mappings/, package.json, the
 *   catalog snapshot, the worker file) resolve the same from either.
 */
import { build } from 'esbuild';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire, isBuiltin } from 'node:module';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const outdir = join(root, 'dist', 'bundle');
rmSync(outdir, { recursive: true, force: true });

/**
 * zod's namespace (`import { z } from 'zod'`) (and zod/v4/core's) re-exports all 64 of its error-message locales
 * (`z.locales`), which keeps every one of them in the bundle and in the heap of each thread
 * that loads zod (the main thread and every encode worker); the project uses English only (zod's
 * default). Its locales index resolves to a module that exports just `en`.
 */
const zodEnglishOnly = {
  name: 'zod-english-only',
  setup(b) {
    b.onResolve({ filter: /^\.\.\/locales\/index\.js$/ }, (args) =>
      /[\\/]zod[\\/]v4[\\/](classic|core|mini)[\\/]/.test(args.importer) ? { path: join(dirname(args.importer), '..', 'locales', 'en.js'), namespace: 'zod-locales' } : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: 'zod-locales' }, (args) => ({
      contents: `export { default as en } from ${JSON.stringify(args.path)};`,
      resolveDir: dirname(args.path),
      loader: 'js',
    }));
  },
};

/**
 * Node's built-ins reach the bundle's ES modules through `require` (the banner's), not through
 * `import`. Node builds an ES module facade of a built-in by reading every one of its exports,
 * getters included (nodejs/node#59686): on Node 24, `node:http`'s WebSocket, CloseEvent and
 * MessageEvent getters load all of Node's own undici (62 modules more), about 12 MB of RSS and
 * 2.5 MB of heap in a thread that never uses them; `node:process` and `node:util` run getters
 * too. Node 20's facades cost nothing more.
 *
 * Each built-in imported becomes one small ES module: `require('node:...')` as its default
 * export, and each of the built-in's plain (data) properties, as this Node has them at build
 * time, as a named export. Each is read in a call marked pure, so esbuild drops the ones no file
 * imports: what is a data property on the Node that builds can be a getter on the Node that runs
 * (Node 24 made `fs.F_OK` and its kin getters that print a deprecation warning; a bundle built on
 * Node 20 that read them all printed it at every start on Node 24). Getters at build time are
 * left out, so nothing runs them; an import of one of those names fails the build (esbuild: "No
 * matching export"), and that import site then takes the default export and reads the property
 * when it needs it. (esbuild's CommonJS interop would do too, but copies every property into a
 * getter for each importing file: 0.6 MB more heap in an encode worker.)
 */
const requireForBuild = createRequire(import.meta.url);
const builtinsThroughRequire = {
  name: 'builtins-through-require',
  setup(b) {
    b.onResolve({ filter: /^(node:)?[a-z][a-z0-9_/]*$/ }, (args) =>
      (args.kind === 'import-statement' || args.kind === 'dynamic-import') && isBuiltin(args.path)
        ? { path: args.path.startsWith('node:') ? args.path : `node:${args.path}`, namespace: 'builtin-via-require' }
        : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: 'builtin-via-require' }, (args) => {
      const descriptors = Object.getOwnPropertyDescriptors(requireForBuild(args.path));
      const names = Object.keys(descriptors).filter((k) => 'value' in descriptors[k] && /^[A-Za-z_$][\w$]*$/.test(k) && k !== 'default');
      const lines = [`const m = require(${JSON.stringify(args.path)});`, 'export default m;', ...names.map((k) => `export const ${k} = /* @__PURE__ */ (() => m.${k})();`)];
      return { contents: lines.join('\n'), loader: 'js' };
    });
  },
};

const result = await build({
  absWorkingDir: root,
  entryPoints: {
    cli: 'dist/cli-main.js',
    'encode-worker': 'dist/pipeline/encode-worker.js',
    'reference-lookup-worker': 'dist/sources/reference-lookup-worker.js',
  },
  outdir,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  // ES module builds first: @opentelemetry/core has no exports map, so Node's main field would
  // give its CommonJS build, which requires all of @opentelemetry/semantic-conventions (200 kB,
  // every constant kept, 4 MiB of heap with it in the main thread). Its ES build is tree-shaken.
  mainFields: ['module', 'main'],
  target: 'node20',
  chunkNames: 'chunk-[hash]',
  external: ['@aws-sdk/*', '@smithy/*', '@opentelemetry/otlp-transformer', '@opentelemetry/resources', 'google-auth-library'],
  // CommonJS dependencies call require() for Node's built-ins: give ES module output one
  banner: { js: "import { createRequire as __taoCreateRequire } from 'node:module'; const require = __taoCreateRequire(import.meta.url);" },
  // ASCII output: V8 keeps a module's source in its heap (lazy compilation, toString), as one byte
  // per character only when every character is Latin-1; one arrow or dash in a comment made a
  // whole chunk two bytes per character (3.8 MB instead of 1.9 for the chunks a run loads)
  charset: 'ascii',
  sourcemap: 'linked',
  legalComments: 'linked',
  logLevel: 'warning',
  metafile: true,
  plugins: [zodEnglishOnly, builtinsThroughRequire],
});

const outputs = Object.entries(result.metafile.outputs).filter(([f]) => f.endsWith('.js'));
// `charset: 'ascii'` escapes strings, identifiers and regular expressions, not comments: the
// characters left (in comments only) become '?', one UTF-16 unit for one, so the source maps' columns hold
for (const [f] of outputs) {
  const file = join(root, f);
  const text = readFileSync(file, 'utf8');
  if (/[^\x00-\x7f]/.test(text)) writeFileSync(file, text.replace(/[^\x00-\x7f]/g, '?'));
}
const bytes = outputs.reduce((n, [, o]) => n + o.bytes, 0);
process.stdout.write(`bundle: ${outputs.length} files, ${(bytes / 1e6).toFixed(1)} MB in dist/bundle/\n`);
