/**
 * A tenant's checkpoint as the bytes of its file: the same JSON text as `JSON.stringify` gives,
 * written piece by piece into one buffer kept from one save to the next.
 *
 * Why not `JSON.stringify` of the whole state: a directory or S3 source keeps an entry for every
 * object it finished within its lookback (some 400 bytes each), so a tenant with a few thousand
 * objects has a checkpoint of megabytes, and a backlog saves it after every acknowledgement. One
 * string of that size per save lands in V8's large-object space, which only a full collection
 * frees; in a run over 6 000 small objects (a 2.3 MB checkpoint) the main thread's heap grew to
 * 93 MB between two full collections and the process peaked 50 MB higher than with the saves
 * spaced a second apart (docs/performance.md). Here the state is walked down to each source's
 * objects, which are stringified 64 at a time (a string of some 25 KB, which dies young), and
 * their UTF-8 bytes are written into the kept buffer.
 */

/** How deep the walk goes before a value is stringified whole: the file, `sources`, a source, its `objects` (or `gone`, `position`). */
const WALK_DEPTH = 3;

/** Members of the deepest level stringified together (some 400 bytes each: 25 KB a group). */
const GROUP = 64;

/** The buffer's first size; it grows by doubling and is kept. */
const FIRST_BYTES = 64 * 1024;

/** A kept buffer this many times larger than the last checkpoint (and over 1 MiB) is let go for a smaller one. */
const SHRINK_FACTOR = 4;
const SHRINK_ABOVE = 1024 * 1024;

const BRACE_OPEN = 0x7b;
const BRACE_CLOSE = 0x7d;
const COMMA = 0x2c;
const COLON = 0x3a;

export class CheckpointEncoder {
  private buf: Buffer = Buffer.allocUnsafeSlow(FIRST_BYTES);
  private len = 0;

  /** The bytes of `value` as JSON: a view of the kept buffer, valid until the next call. */
  encode(value: unknown): Buffer {
    this.len = 0;
    this.value(value, 0);
    const out = this.buf.subarray(0, this.len);
    if (this.buf.length > SHRINK_ABOVE && this.buf.length > SHRINK_FACTOR * this.len) {
      // (the view stays valid: it keeps the old buffer alive until the caller lets it go)
      this.buf = Buffer.allocUnsafeSlow(Math.max(FIRST_BYTES, 2 * this.len));
    }
    return out;
  }

  private value(v: unknown, depth: number): void {
    if (depth > WALK_DEPTH || !isPlainRecord(v)) {
      const text = JSON.stringify(v);
      // undefined, functions and symbols have no text; as members they are left out by object(), and at the top there is always an object
      this.text(text ?? 'null');
      return;
    }
    this.object(v, depth);
  }

  private object(o: Record<string, unknown>, depth: number): void {
    if (depth === WALK_DEPTH) return this.membersInGroups(o);
    this.byte(BRACE_OPEN);
    let first = true;
    for (const k of Object.keys(o)) {
      const member = o[k];
      // as JSON.stringify: members without a JSON text are left out
      if (member === undefined || typeof member === 'function' || typeof member === 'symbol') continue;
      if (!first) this.byte(COMMA);
      first = false;
      this.text(JSON.stringify(k));
      this.byte(COLON);
      this.value(member, depth + 1);
    }
    this.byte(BRACE_CLOSE);
  }

  /**
   * The deepest level walked (a source's `objects`): its members stringified GROUP at a time, as
   * the members of an object of their own (one call and one write per group, a string small
   * enough for the young generation), the braces of each group's text left out.
   */
  private membersInGroups(o: Record<string, unknown>): void {
    this.byte(BRACE_OPEN);
    let group = Object.create(null) as Record<string, unknown>;
    let inGroup = 0;
    let first = true;
    const flush = (): void => {
      const text = JSON.stringify(group);
      // '{}' when every member had no JSON text
      if (text.length > 2) {
        if (!first) this.byte(COMMA);
        first = false;
        this.text(text.slice(1, -1));
      }
      group = Object.create(null) as Record<string, unknown>;
      inGroup = 0;
    };
    for (const k of Object.keys(o)) {
      group[k] = o[k];
      if (++inGroup === GROUP) flush();
    }
    if (inGroup > 0) flush();
    this.byte(BRACE_CLOSE);
  }

  private byte(b: number): void {
    if (this.len === this.buf.length) this.grow(1);
    this.buf[this.len++] = b;
  }

  private text(s: string): void {
    // at most 3 UTF-8 bytes per UTF-16 unit (a surrogate pair: 4 bytes for 2 units)
    if (this.len + 3 * s.length > this.buf.length) this.grow(3 * s.length);
    this.len += this.buf.write(s, this.len, 'utf8');
  }

  private grow(more: number): void {
    const next = Buffer.allocUnsafeSlow(Math.max(2 * this.buf.length, this.len + more));
    this.buf.copy(next, 0, 0, this.len);
    this.buf = next;
  }
}

/** A plain object (or one without a prototype) and no toJSON: JSON.stringify writes it member by member. Anything else is stringified whole. */
function isPlainRecord(v: unknown): v is Record<string, unknown> {
  if (typeof v !== 'object' || v === null) return false;
  const proto = Object.getPrototypeOf(v) as unknown;
  return (proto === Object.prototype || proto === null) && typeof (v as { toJSON?: unknown }).toJSON !== 'function';
}
