/**
 * Every relative link in README.md, CONTRIBUTING.md, docs/ and the scripts' READMEs leads
 * somewhere: the file (or folder) exists, and a `#fragment` names a heading of the target page, as
 * GitHub makes heading anchors (lower case, punctuation dropped, spaces as dashes, `-1`, `-2` for
 * repeated headings).
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it, expect } from 'vitest';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

function markdownFiles(): string[] {
  const docs = (dir: string): string[] => readdirSync(dir).flatMap((n) => {
    const p = path.join(dir, n);
    return statSync(p).isDirectory() ? docs(p) : n.endsWith('.md') ? [p] : [];
  });
  const scriptReadmes = readdirSync(path.join(ROOT, 'scripts'))
    .map((n) => path.join(ROOT, 'scripts', n, 'README.md'))
    .filter((p) => existsSync(p));
  return [path.join(ROOT, 'README.md'), path.join(ROOT, 'CONTRIBUTING.md'), ...docs(path.join(ROOT, 'docs')), ...scriptReadmes];
}

/** The text outside fenced code blocks. */
function prose(text: string): string {
  let fenced = false;
  return text
    .split('\n')
    .filter((line) => {
      if (/^\s*(```|~~~)/.test(line)) {
        fenced = !fenced;
        return false;
      }
      return !fenced;
    })
    .join('\n');
}

/** GitHub's anchors for the headings of a page. */
function headingAnchors(text: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const m of prose(text).matchAll(/^#{1,6} +(.+?) *#*$/gm)) {
    const slug = m[1]!
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\- _]/gu, '')
      .replace(/ /g, '-');
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    anchors.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return anchors;
}

describe("links in README.md, CONTRIBUTING.md, docs/ and the scripts' READMEs", () => {
  it('GitHub anchors are computed as GitHub does', () => {
    expect([...headingAnchors('# A `b`: c\n## Environment variables: `${VAR}`\n```sh\n# not a heading\n```\n## x\n## x\n### What an answer does')]).toEqual(['a-b-c', 'environment-variables-var', 'x', 'x-1', 'what-an-answer-does']);
  });

  it('every relative link names an existing file and an existing heading', () => {
    const broken: string[] = [];
    const anchorsOf = new Map<string, Set<string>>();
    const anchors = (file: string) => {
      if (!anchorsOf.has(file)) anchorsOf.set(file, headingAnchors(readFileSync(file, 'utf8')));
      return anchorsOf.get(file)!;
    };
    const files = markdownFiles();
    expect(files.length).toBeGreaterThan(15);
    for (const file of files) {
      const text = prose(readFileSync(file, 'utf8')).replace(/`[^`\n]*`/g, '');
      for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        const link = m[1]!;
        if (/^[a-z][a-z0-9+.-]*:/i.test(link)) continue; // https:, mailto:
        const [target, fragment] = link.split('#') as [string, string | undefined];
        const resolved = target === '' ? file : path.resolve(path.dirname(file), target);
        const where = `${path.relative(ROOT, file)}: ${link}`;
        if (!existsSync(resolved)) broken.push(`${where} (no such file)`);
        else if (fragment !== undefined && resolved.endsWith('.md') && !anchors(resolved).has(fragment)) broken.push(`${where} (no such heading)`);
      }
    }
    expect(broken).toEqual([]);
  });
});
