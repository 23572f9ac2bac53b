/**
 * The thread a lookup file is parsed in (reference-lookup-file.ts, readLookupFile): started for
 * one file, it streams and parses it, writes the users into a SharedArrayBuffer (which the
 * daemon keeps: nothing of them is copied back), answers once and ends, so its heap, and all
 * that parsing left in it, is given back at once.
 */
import { createReadStream } from 'node:fs';
import { parentPort, workerData } from 'node:worker_threads';
import { LookupFileError, parseLookupStream, type LookupWorkerAnswer, type LookupWorkerInput } from './reference-lookup-file.js';

const input = workerData as LookupWorkerInput;
let answer: LookupWorkerAnswer;
try {
  const r = await parseLookupStream(input.kind, input.file, createReadStream(input.file, { highWaterMark: 256 * 1024 }), input.format, input.maxItems, new Set(input.fields));
  const base = { ok: true as const, census: r.census.toData(), entries: r.entries, hash: r.hash };
  answer = r.copy.kind === 'users' ? { ...base, users: r.copy.users.section.transferable } : { ...base, sites: [...r.copy.sites] };
} catch (err) {
  answer =
    err instanceof LookupFileError
      ? { ok: false, file: err.file, line: err.line, problem: err.problem }
      : { ok: false, file: input.file, line: undefined, problem: `cannot read the lookup file (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})` };
}
parentPort!.postMessage(answer);
