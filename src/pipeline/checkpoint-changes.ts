/**
 * What changed in a tenant's checkpoint state since it was last written, as one line of the
 * checkpoint journal (read back by pipeline/checkpoint-file.ts).
 *
 * An object's progress entry is never changed in place: the pipeline and the sources replace it
 * with a new object (pipeline/object-tracker.ts commits, the sources' renames and pruning). So an
 * entry changed when the object under its key is not the one last written, and was removed when
 * its key is gone; one pass over the keys, with no entry encoded unless it changed. A source's
 * `position` and `gone` are small and changed in place: they are compared as their JSON text.
 */
import type { ObjectProgress, SourceCheckpoint } from '../sources/source-checkpoint.js';

/** What was last written of one source. */
interface WrittenSource {
  objects: Map<string, ObjectProgress>;
  position: string | undefined;
  gone: string | undefined;
}

/** The changes of one save, ready to be written and then remembered as written. */
export interface PendingChanges {
  /** The journal line, newline included. */
  readonly line: string;
  readonly sources: ReadonlyArray<{ id: string; objects: Array<[string, ObjectProgress | null]>; position?: string | undefined; gone?: string | undefined; hasPosition: boolean; hasGone: boolean }>;
}

/** The JSON text of a source's position or gone (undefined: it has none). */
function textOf(value: object | undefined): string | undefined {
  return value === undefined ? undefined : JSON.stringify(value);
}

export class WrittenEntries {
  private sources = new Map<string, WrittenSource>();

  /**
   * Taken when the whole state is encoded for a fold: what it holds, to be kept once the fold is
   * written (`keep`). Synchronous with the encoding, so a change made while the fold is written
   * counts as a change.
   */
  static of(sources: Record<string, SourceCheckpoint>): WrittenEntries {
    const out = new WrittenEntries();
    for (const id of Object.keys(sources)) {
      const s = sources[id]!;
      const objects = new Map<string, ObjectProgress>();
      for (const key in s.objects) objects.set(key, s.objects[key]!);
      out.sources.set(id, { objects, position: textOf(s.position), gone: textOf(s.gone) });
    }
    return out;
  }

  /** The changes since what was written, as a journal line; undefined when nothing changed. */
  changes(sources: Record<string, SourceCheckpoint>, savedAt: string): PendingChanges | undefined {
    const changed: Array<PendingChanges['sources'][number]> = [];
    for (const id of Object.keys(sources)) {
      const s = sources[id]!;
      const written = this.sources.get(id);
      const objects: Array<[string, ObjectProgress | null]> = [];
      let found = 0;
      for (const key in s.objects) {
        const p = s.objects[key]!;
        const before = written?.objects.get(key);
        if (before !== undefined) found++;
        if (before !== p) objects.push([key, p]);
      }
      if (written && found < written.objects.size) for (const key of written.objects.keys()) if (!(key in s.objects)) objects.push([key, null]);
      const position = textOf(s.position);
      const gone = textOf(s.gone);
      const hasPosition = position !== written?.position;
      const hasGone = gone !== written?.gone;
      if (objects.length > 0 || hasPosition || hasGone) changed.push({ id, objects, position, gone, hasPosition, hasGone });
    }
    if (changed.length === 0) return undefined;
    let line = `{"savedAt":${JSON.stringify(savedAt)},"sources":{`;
    changed.forEach((c, i) => {
      line += `${i > 0 ? ',' : ''}${JSON.stringify(c.id)}:{"objects":{`;
      c.objects.forEach(([key, p], j) => (line += `${j > 0 ? ',' : ''}${JSON.stringify(key)}:${p === null ? 'null' : JSON.stringify(p)}`));
      line += '}';
      if (c.hasPosition) line += `,"position":${c.position ?? 'null'}`;
      if (c.hasGone) line += `,"gone":${c.gone ?? 'null'}`;
      line += '}';
    });
    return { line: `${line}}}\n`, sources: changed };
  }

  /** `pending` was written (and synced): it is what the files hold now. */
  keep(pending: PendingChanges): void {
    for (const c of pending.sources) {
      let written = this.sources.get(c.id);
      if (!written) this.sources.set(c.id, (written = { objects: new Map(), position: undefined, gone: undefined }));
      for (const [key, p] of c.objects) {
        if (p === null) written.objects.delete(key);
        else written.objects.set(key, p);
      }
      if (c.hasPosition) written.position = c.position;
      if (c.hasGone) written.gone = c.gone;
    }
  }
}
