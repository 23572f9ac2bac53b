/** A parsed JSON object seen as a record's fields (the same interface as a scanned line, FlatJsonLine). */
import type { FieldName, RecordFields } from '../decoding/flat-json-line.js';

/** A parsed JSON object's own fields, in its order (the same order as `for…in`). */
export class ObjectFields implements RecordFields {
  private readonly keys: string[];
  constructor(private readonly rec: Record<string, unknown>) {
    this.keys = Object.keys(rec);
  }
  get size(): number {
    return this.keys.length;
  }
  name(i: number): string {
    return this.keys[i]!;
  }
  value(i: number): unknown {
    return this.rec[this.keys[i]!];
  }
  isNull(i: number): boolean {
    const v = this.rec[this.keys[i]!];
    return v === null || v === undefined;
  }
  isString(i: number): boolean {
    return typeof this.rec[this.keys[i]!] === 'string';
  }
  indexOf(name: string): number {
    return Object.hasOwn(this.rec, name) ? this.keys.indexOf(name) : -1;
  }
  get(name: string): unknown {
    return Object.hasOwn(this.rec, name) ? this.rec[name] : undefined;
  }
  indexOfField(f: FieldName): number {
    return this.indexOf(f.name);
  }
  field(f: FieldName): unknown {
    return this.get(f.name);
  }
}

/** A parsed line → its fields, or why it is not a record. */
export function objectFields(value: unknown): RecordFields | string {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return `not a JSON object (${value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value})`;
  }
  return new ObjectFields(value as Record<string, unknown>);
}
