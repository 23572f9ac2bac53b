/**
 * What the bundle (dist/bundle/, built by `npm run build`, which `npm test` runs first) makes each
 * thread load: every module a thread loads stays in its heap (source, functions, what its top
 * level builds), so what a thread never uses must not be in its static imports.
 */
import { describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { startOtlpReceiver } from './support/otlp-receiver.js';
import { tempDir, writeFixtureTree } from './support/activity-fixtures.js';
import { writeDirectoryTenantConfig } from './support/config-files.js';
import { REPO_ROOT } from './support/cli-process.js';

const BUNDLE = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'bundle');

/** The files a bundle entry loads before it runs: its static imports, transitively (not `import()`). */
function staticClosure(entry: string): string[] {
  const seen = new Set<string>();
  const visit = (file: string): void => {
    if (seen.has(file)) return;
    seen.add(file);
    const text = readFileSync(join(BUNDLE, file), 'utf8');
    for (const m of text.matchAll(/^(?:import\s+"\.\/([\w-]+\.js)"|\}\s*from\s+"\.\/([\w-]+\.js)"|import\s+[\w${},\s*]+\s+from\s+"\.\/([\w-]+\.js)")/gm)) visit(m[1] ?? m[2] ?? m[3]!);
  };
  visit(entry);
  return [...seen];
}

/** The npm packages bundled into these files (esbuild marks each module's start with its path). */
function packagesIn(files: string[]): Set<string> {
  const found = new Set<string>();
  for (const f of files) {
    for (const m of readFileSync(join(BUNDLE, f), 'utf8').matchAll(/^\/\/ (?:\S*\/)?node_modules\/((?:@[^/\s]+\/)?[^/\s]+)\//gm)) found.add(m[1]!);
  }
  return found;
}

/**
 * `run --once` of the built CLI (dist/cli.js) on 2 fixture objects of `perObject` records each,
 * sending OTLP to a receiver of the test; `nodeArgs` gives node's own flags (it may write files
 * in the run's folder first).
 */
async function runOnceSendingOtlp(prefix: string, perObject: number, nodeArgs: (work: string) => string[], env: Record<string, string> = {}): Promise<{ written: number; received: number; output: string }> {
  const receiver = await startOtlpReceiver();
  try {
    const work = tempDir(prefix);
    const tree = writeFixtureTree(join(work, 'logs'), 2, perObject);
    const config = writeDirectoryTenantConfig(work, [{ type: 'otlp', endpoint: receiver.url }]);
    const run = await promisify(execFile)(process.execPath, [...nodeArgs(work), join(REPO_ROOT, 'dist', 'cli.js'), 'run', '--once', '--config', config], {
      cwd: REPO_ROOT,
      timeout: 120_000,
      env: { ...process.env, NODE_OPTIONS: '', ...env },
    });
    return { written: tree.records.length, received: receiver.records().length, output: `${run.stdout}${run.stderr}` };
  } finally {
    await receiver.close();
  }
}

describe('the bundle', () => {
  it('is built', () => {
    expect(existsSync(join(BUNDLE, 'encode-worker.js'))).toBe(true);
  });

  it('follows static imports (the walk reaches what each entry needs)', () => {
    const worker = staticClosure('encode-worker.js');
    expect(worker.some((f) => readFileSync(join(BUNDLE, f), 'utf8').includes('var ChunkProcessor = class'))).toBe(true);
    // the worker parses lines with its own code, and its chunks are found through re-exports too
    expect(worker.length).toBeGreaterThan(3);
  });

  it('gives the encode worker neither the YAML parser nor the schema library (the main thread validates, the worker compiles)', () => {
    const pkgs = packagesIn(staticClosure('encode-worker.js'));
    expect([...pkgs]).not.toContain('zod');
    expect([...pkgs]).not.toContain('yaml');
    // while the CLI has both (the walk does find packages)
    const cli = packagesIn(readdirSync(BUNDLE).filter((f) => f.endsWith('.js')));
    expect([...cli]).toEqual(expect.arrayContaining(['zod', 'yaml']));
  });

  it('gives the CLI csv-parse only once a CSV lookup file is read (import())', () => {
    const cli = readFileSync(join(BUNDLE, 'cli.js'), 'utf8');
    const commands = [...cli.matchAll(/import\("\.\/([\w-]+\.js)"\)/g)].map((m) => m[1]!);
    expect(commands.length).toBeGreaterThan(0);
    const loaded = new Set(['cli.js', ...commands].flatMap(staticClosure));
    expect([...packagesIn([...loaded])]).toContain('commander');
    expect([...packagesIn([...loaded])]).not.toContain('csv-parse');
  });

  it('holds no copy of @opentelemetry/semantic-conventions (ES module builds are preferred, so it is tree-shaken)', () => {
    const all = readdirSync(BUNDLE).filter((f) => f.endsWith('.js'));
    expect([...packagesIn(all)]).not.toContain('@opentelemetry/semantic-conventions');
  });

  it("imports none of Node's built-ins as an ES module (their facades run every getter): they come through require", () => {
    const builtins = new Set(builtinModules.map((m) => m.replace(/^node:/, '')));
    const files = readdirSync(BUNDLE).filter((x) => x.endsWith('.js')).map((f) => ({ f, text: readFileSync(join(BUNDLE, f), 'utf8') }));
    const esmImports: string[] = [];
    for (const { f, text } of files) {
      for (const m of text.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|^import\s*)"(?:node:)?([a-z][\w/]*)"/gm)) if (builtins.has(m[1]!)) esmImports.push(`${f}: ${m[0]}`);
    }
    expect(esmImports).toEqual([]);
    // (and the walk finds what it looks for: the built-ins are there, required)
    expect(files.some(({ text }) => text.includes('require("node:http")'))).toBe(true);
  });

  it('reads from a built-in, at load, only the properties the bundle uses (a data property when built can be a deprecated getter where it runs)', () => {
    // Node 24 made fs.F_OK and its kin getters that print DEP0176: a bundle built on Node 20 that
    // read every data property of node:fs at load printed that warning at each start on Node 24
    const unused: string[] = [];
    let read = 0;
    for (const f of readdirSync(BUNDLE).filter((x) => x.endsWith('.js'))) {
      const text = readFileSync(join(BUNDLE, f), 'utf8');
      for (const section of text.split('// builtin-via-require:').slice(1)) {
        const builtin = section.slice(0, section.indexOf('\n'));
        const end = section.search(/^\/\/ /m); // the next module's start
        for (const m of (end < 0 ? section : section.slice(0, end)).matchAll(/^var ([\w$]+) = (?:\/\* @__PURE__ \*\/ \(\(\) => )?m\d*\.([\w$]+)(?:\)\(\))?;$/gm)) {
          read++;
          const uses = text.match(new RegExp(`(?<![\\w$.])${m[1]!.replace(/\$/g, '\\$')}(?![\\w$])`, 'g'))!.length;
          if (uses < 2) unused.push(`${f}: ${builtin}.${m[2]}`);
        }
      }
    }
    expect(unused).toEqual([]);
    // (and the walk finds such reads: the bundle does take named exports of built-ins)
    expect(read).toBeGreaterThan(10);
  });

  it('starts, reads and sends without a deprecation warning from Node on this runtime (--throw-deprecation)', async () => {
    const run = await runOnceSendingOtlp('tao-deprecation-', 20, () => ['--throw-deprecation'], { LOG_LEVEL: 'warn' });
    expect(run.received).toBe(run.written);
    expect(run.output).not.toMatch(/Deprecat|DEP0/);
  });

  it("sends OTLP without loading Node's own undici (node:http's getters load it when an ES module imports node:http, on Node 24)", async () => {
    // the main thread's list of the modules Node loaded, written as it exits
    let listFile = '';
    const run = await runOnceSendingOtlp('tao-facade-', 50, (work) => {
      const preload = join(work, 'loaded-modules.cjs');
      listFile = join(work, 'loaded-modules.txt');
      writeFileSync(preload, `process.on('exit', () => require('node:fs').writeFileSync(${JSON.stringify(listFile)}, process.moduleLoadList.join('\\n')));\n`);
      return ['--require', preload];
    });
    expect(run.received).toBe(run.written);
    const loaded = readFileSync(listFile, 'utf8').split('\n');
    expect(loaded).toContain('NativeModule http');
    expect(loaded.filter((m) => m.includes('undici'))).toEqual([]);
  });
});
