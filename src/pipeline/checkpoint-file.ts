/**
 * Reading a tenant's checkpoint back: `checkpoints.json`, the whole state as of its last fold,
 * then the journal it names (`checkpoints.journal.<n>`), one line for each save since, each
 * holding only the entries that changed. Checked against the format, so a damaged file stops
 * the tenant with its name and line instead of sending everything again or skipping anything.
 *
 * The writing side is pipeline/checkpoint-store.ts; the journal's lines are made by
 * pipeline/checkpoint-changes.ts.
 */
import { join } from 'node:path';
import { z } from 'zod';
import { readTextIfExists } from '../core/read-text-if-exists.js';
import type { ObjectProgress, SourceCheckpoint } from '../sources/source-checkpoint.js';

export const BASE_NAME = 'checkpoints.json';

export const JOURNAL_PREFIX = 'checkpoints.journal.';

/** The journal that follows base generation `journal`. */
export function journalName(journal: number): string {
  return `${JOURNAL_PREFIX}${journal}`;
}

export interface CheckpointFile {
  version: 1;
  savedAt: string;
  /** The generation of the journal that follows this file (none before the first fold that started one). */
  journal?: number;
  sources: Record<string, SourceCheckpoint>;
}

/** A checkpoint file that cannot be used: names the file (and line) and what is wrong with it. */
export class CheckpointFileError extends Error {
  constructor(
    readonly file: string,
    readonly problem: string,
  ) {
    super(
      `${file}: ${problem}. The tenant does not start rather than read everything again; repair the file, or move it away ` +
        'to start from nothing (every object is then read and sent again)',
    );
    this.name = 'CheckpointFileError';
  }
}

/** What a checkpoint file must look like to be used (fields added by later versions are kept). */
const objectProgressSchema = z.looseObject({
  line: z.number().int().min(0),
  done: z.boolean().optional(),
  size: z.number().min(0).optional(),
  version: z.string().optional(),
});
const positionSchema = z.record(z.string(), z.union([z.string(), z.number()]));
const baseSchema = z.looseObject({
  version: z.literal(1),
  savedAt: z.string(),
  journal: z.number().int().min(1).optional(),
  sources: z.record(
    z.string(),
    z.looseObject({
      objects: z.record(z.string(), objectProgressSchema),
      position: positionSchema.optional(),
    }),
  ),
});
const journalHeaderSchema = z.looseObject({ version: z.literal(1), journal: z.number().int().min(1) });
/** One save's changes: an entry `null` was removed; `position` or `gone` present when it changed (`null`: removed). */
const journalLineSchema = z.looseObject({
  savedAt: z.string(),
  sources: z.record(
    z.string(),
    z.looseObject({
      objects: z.record(z.string(), objectProgressSchema.nullable()),
      position: positionSchema.nullable().optional(),
      gone: z.record(z.string(), objectProgressSchema).nullable().optional(),
    }),
  ),
});

/** One zod issue as `path: message`, the path as it would be written in JavaScript. */
function describeIssue(issue: z.core.$ZodIssue): string {
  const path = issue.path
    .map((p, i) => (typeof p === 'number' ? `[${p}]` : typeof p === 'string' && /^[A-Za-z_$][\w$]*$/.test(p) ? `${i === 0 ? '' : '.'}${p}` : `[${JSON.stringify(String(p))}]`))
    .join('');
  return `${path || '(top level)'}: ${issue.message}`;
}

function describeIssues(issues: z.core.$ZodIssue[]): string {
  return `${issues.slice(0, 3).map(describeIssue).join('; ')}${issues.length > 3 ? ` (and ${issues.length - 3} more)` : ''}`;
}

/** `checkpoints.json` alone, checked; undefined when there is none. */
function readBase(file: string): CheckpointFile | undefined {
  const text = readTextIfExists(file);
  if (text === undefined) return undefined;
  if (text.trim() === '') throw new CheckpointFileError(file, 'the checkpoint file is empty');
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new CheckpointFileError(file, `the checkpoint file is not valid JSON (${(err as Error).message})`);
  }
  if (typeof json === 'object' && json !== null && 'version' in json && json.version !== 1) {
    throw new CheckpointFileError(file, `checkpoint file version ${JSON.stringify(json.version)}, this version of the program reads version 1`);
  }
  const checked = baseSchema.safeParse(json);
  if (!checked.success) throw new CheckpointFileError(file, `not a checkpoint file: ${describeIssues(checked.error.issues)}`);
  // (checked, it is the file as written: no defaults to fill in.) Objects by key, a name from
  // the data: no prototype (an object named `__proto__` is an object like any other), so they
  // are taken from the parsed JSON, which keeps such a key, not from zod's copy, which does not
  const parsed = json as CheckpointFile;
  for (const s of Object.values(parsed.sources)) s.objects = Object.assign(Object.create(null) as SourceCheckpoint['objects'], s.objects);
  return parsed;
}

interface JournalLine {
  savedAt: string;
  sources: Record<string, { objects: Record<string, ObjectProgress | null>; position?: Record<string, string | number> | null; gone?: Record<string, ObjectProgress> | null }>;
}

/**
 * Apply journal `file` (generation `journal`) to `state`; false when there is no such file. A
 * last line without its newline is a save cut short (a crash or power cut while it was being
 * written, so never acknowledged as saved) and is left out; any other line that is not a save's
 * changes is an error naming the line.
 */
function replayJournal(file: string, journal: number, state: CheckpointFile): boolean {
  const text = readTextIfExists(file);
  if (text === undefined) return false;
  const lines = text.split('\n');
  lines.pop(); // what follows the last newline: '' or a line cut short
  if (lines.length === 0) return true; // the header cut short: nothing saved in it yet
  const parse = (i: number): unknown => {
    try {
      return JSON.parse(lines[i]!);
    } catch (err) {
      throw new CheckpointFileError(file, `line ${i + 1} is not valid JSON (${(err as Error).message})`);
    }
  };
  const header = journalHeaderSchema.safeParse(parse(0));
  if (!header.success) throw new CheckpointFileError(file, `line 1: not a checkpoint journal: ${describeIssues(header.error.issues)}`);
  if (header.data.journal !== journal) throw new CheckpointFileError(file, `line 1: journal ${header.data.journal}, where ${BASE_NAME} names journal ${journal}`);
  for (let i = 1; i < lines.length; i++) {
    const json = parse(i);
    const checked = journalLineSchema.safeParse(json);
    if (!checked.success) throw new CheckpointFileError(file, `line ${i + 1}: not a checkpoint save: ${describeIssues(checked.error.issues)}`);
    // (the parsed JSON, not zod's copy: it keeps keys named `__proto__`)
    const line = json as JournalLine;
    state.savedAt = line.savedAt;
    for (const id of Object.keys(line.sources)) {
      const changes = line.sources[id]!;
      const s = (state.sources[id] ??= { objects: Object.create(null) as SourceCheckpoint['objects'] });
      for (const key of Object.keys(changes.objects)) {
        const p = changes.objects[key];
        if (p === null) delete s.objects[key];
        else s.objects[key] = p!;
      }
      if (changes.position === null) delete s.position;
      else if (changes.position !== undefined) s.position = changes.position;
      if (changes.gone === null) delete s.gone;
      else if (changes.gone !== undefined) s.gone = changes.gone;
    }
  }
  return true;
}

/**
 * The checkpoint state saved in directory `dir`: `checkpoints.json` with its journal applied
 * (an empty state when there is neither). Safe to call while a daemon saves into the directory:
 * a fold between reading the file and its journal is noticed and the read made again.
 */
export function readCheckpointState(dir: string): CheckpointFile {
  const file = join(dir, BASE_NAME);
  for (let attempt = 0; ; attempt++) {
    const base = readBase(file) ?? { version: 1, savedAt: '', sources: {} };
    if (base.journal === undefined) return base;
    if (replayJournal(join(dir, journalName(base.journal)), base.journal, base)) return base;
    // no journal of that generation: none was written, or a fold replaced both meanwhile
    if (attempt >= 3 || readBase(file)?.journal === base.journal) return base;
  }
}
