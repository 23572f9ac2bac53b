// @ts-check
/** The benchmark children's (floor.mjs, naive.mjs) list of corpus files: every file below a folder, sorted. */
import fs from 'node:fs';
import path from 'node:path';

/** @param {string} dir @returns {string[]} */
export function corpusFiles(dir) {
  /** @type {string[]} */
  const out = [];
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...corpusFiles(p));
    else if (e.isFile()) out.push(p);
  }
  return out.sort();
}
