/**
 * What the bundle (dist/bundle/, built by `npm run build`, which `npm test` runs first) makes each
 * thread load: every module a thread loads stays in its heap (source, functions, what its top
 * level builds), so what a thread never uses must not be in its static imports.
 */
import { describe, expect, it } from 'vitest';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

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
    for (const m of readFileSync(join(BUNDLE, f), 'utf8').matchAll(/^\/\/ node_modules\/((?:@[^/\s]+\/)?[^/\s]+)\//gm)) found.add(m[1]!);
  }
  return found;
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
});
