/** A file's text, or undefined when there is no such file (any other error is thrown). */
import { readFileSync } from 'node:fs';

export function readTextIfExists(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}
