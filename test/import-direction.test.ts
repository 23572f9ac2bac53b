/**
 * Imports flow one way, down the path of the data (CONTRIBUTING.md, "Layout of src/"):
 *
 *   cli → daemon → pipeline → sources | export → mapping → decoding → core
 *
 * A module may import its own layer or any layer below it, never one above; `sources` and
 * `export` are siblings and do not import each other. Type-only imports count too: a layer that
 * needs a type from above has the type in the wrong place. No runtime cycles between modules either.
 */
import { describe, it, expect } from 'vitest';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';

const SRC = join(import.meta.dirname, '..', 'src');
const RANK: Record<string, number> = { core: 0, decoding: 1, mapping: 2, sources: 3, export: 3, pipeline: 4, daemon: 5, '.': 6 };

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? files(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : []));
}

const layerOf = (file: string): string => {
  const rel = relative(SRC, file);
  return rel.includes(sep) ? rel.split(sep)[0]! : '.';
};

/** Every relative import and re-export of a file (static and dynamic), resolved to a .ts file. */
function importsOf(file: string): Array<{ target: string; text: string; typeOnly: boolean }> {
  const text = readFileSync(file, 'utf8');
  const out: Array<{ target: string; text: string; typeOnly: boolean }> = [];
  for (const m of text.matchAll(/(?:^|\n)\s*(?:import|export)\s[^;'"]*?from\s+'(\.[^']+)'|import\(\s*'(\.[^']+)'\s*\)/g)) {
    const spec = (m[1] ?? m[2])!;
    const stmt = m[0].trim();
    out.push({ target: resolve(dirname(file), spec).replace(/\.js$/, '.ts'), text: stmt, typeOnly: /^(?:import|export)\s+type\b/.test(stmt) });
  }
  return out;
}

const all = files(SRC);

describe('imports flow one way', () => {
  it('every layer is known (a new top-level folder gets a place in the order)', () => {
    const unknown = [...new Set(all.map(layerOf))].filter((l) => !(l in RANK));
    expect(unknown).toEqual([]);
  });

  it('no module imports a layer above its own, and sources and export do not import each other', () => {
    const wrong: string[] = [];
    for (const f of all) {
      for (const { target } of importsOf(f)) {
        const a = layerOf(f);
        const b = layerOf(target);
        if (a === b) continue;
        if (RANK[b]! >= RANK[a]!) wrong.push(`${relative(SRC, f)} → ${relative(SRC, target)}`);
      }
    }
    expect(wrong).toEqual([]);
  });

  it('no runtime import cycles between modules (type-only imports are erased and load nothing)', () => {
    const graph = new Map(all.map((f) => [f, importsOf(f).filter((i) => !i.typeOnly).map((i) => i.target).filter((t) => t !== f)]));
    const cycles: string[] = [];
    const state = new Map<string, 'open' | 'done'>();
    const stack: string[] = [];
    const visit = (f: string): void => {
      state.set(f, 'open');
      stack.push(f);
      for (const t of graph.get(f) ?? []) {
        if (state.get(t) === 'open') cycles.push(stack.slice(stack.indexOf(t)).concat(t).map((x) => relative(SRC, x)).join(' → '));
        else if (!state.has(t)) visit(t);
      }
      stack.pop();
      state.set(f, 'done');
    };
    for (const f of all) if (!state.has(f)) visit(f);
    expect(cycles).toEqual([]);
  });

  it('the check sees imports: it finds the known edge from the CLI into the daemon', () => {
    const edges = all.filter((f) => layerOf(f) === '.').flatMap((f) => importsOf(f).map((i) => layerOf(i.target)));
    expect(edges).toContain('daemon');
  });
});
