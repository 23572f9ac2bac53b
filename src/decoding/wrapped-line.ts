/**
 * The line forms of Tableau Server's Activity Log files, whose layout is not published: a line
 * is one JSON event in the site schema (`flat`), or that event wrapped, either as the `event`
 * member of an object (`event`) or under `v` in Tableau's native log form
 * (`{"ts":…,"pid":…,"tid":…,"sev":…,"req":…,"sess":…,"site":…,"user":…,"k":…,"v":{…}}`,
 * `native`). A file's form is detected from its first complete line (lineFormOf) by the
 * `tableau-server` source, which passes it on as ObjectKeyInfo.lineForm; the encode worker
 * unwraps each line of a wrapped file (unwrapLine) before it maps the inner record, and keeps the
 * wrapper's other members (its own fields: `ts`, `pid`, `traceUuid`, …) for the mapper to add as
 * attributes (`tableau.server.<snake_case>`).
 */

export type LineForm = 'flat' | 'event' | 'native';

/** The member of each wrapped form that holds the record. */
export const RECORD_MEMBER: Readonly<Record<Exclude<LineForm, 'flat'>, string>> = { event: 'event', native: 'v' };

/** Wrapper members kept at most (besides the record): a wrapper with more is not a line of these forms. */
export const MAX_WRAPPER_FIELDS = 64;

/** The wrapper's own members, in its order (null values left out). */
export type WrapperFields = ReadonlyArray<readonly [string, unknown]>;

export type Unwrapped = { ok: true; record: Record<string, unknown>; wrapper: WrapperFields } | { ok: false; reason: string };

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/**
 * The form of a parsed line: `flat` when it carries a record's own `eventTime`; else `event`
 * when its `event` member is an object, `native` when its `v` member is; else `flat` when it has
 * an `eventType` (a record without its time); undefined when it is none of them (not an object,
 * or an object without a record).
 */
export function lineFormOf(value: unknown): LineForm | undefined {
  if (!isPlainObject(value)) return undefined;
  if (Object.hasOwn(value, 'eventTime')) return 'flat';
  if (isPlainObject(value.event)) return 'event';
  if (isPlainObject(value.v)) return 'native';
  if (Object.hasOwn(value, 'eventType')) return 'flat';
  return undefined;
}

/** The record inside a line of a wrapped form, and the wrapper's own members; or why the line is not of that form. */
export function unwrapLine(value: unknown, form: Exclude<LineForm, 'flat'>): Unwrapped {
  const member = RECORD_MEMBER[form];
  if (!isPlainObject(value)) {
    return { ok: false, reason: `not a JSON object (${value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value}), expected the ${form} form of this file (the record under "${member}")` };
  }
  const record = Object.hasOwn(value, member) ? value[member] : undefined;
  if (!isPlainObject(record)) {
    const what = record === undefined ? 'has no member' : `has a member "${member}" that is not an object, not`;
    return { ok: false, reason: `line ${what} "${member}": not of the ${form} form this file has (detected from its first line, or set by lineFormat)` };
  }
  const wrapper: Array<readonly [string, unknown]> = [];
  for (const k of Object.keys(value)) {
    if (k === member) continue;
    const v = value[k];
    if (v === null || v === undefined) continue;
    if (wrapper.length === MAX_WRAPPER_FIELDS) return { ok: false, reason: `the ${form} wrapper has more than ${MAX_WRAPPER_FIELDS} members besides "${member}"` };
    wrapper.push([k, v]);
  }
  return { ok: true, record, wrapper };
}
