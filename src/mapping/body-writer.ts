/**
 * A body template rendered straight to UTF-8 bytes, for the fast path (RecordMapper.mapDirect):
 * a placeholder whose value is a string of the scanned line is copied from the line's bytes (no
 * string made for it, none for the body), the template's text is copied as encoded once.
 *
 * It gives the bytes of what compileTemplate's function gives (body-template.ts): the same
 * `[section]`s, `?` for a missing value, the word `user ` left out before a person's name, and
 * the same folding of doubled and edge spaces. That folding is done here only where the body's
 * whitespace is all ASCII spaces; where it is not (a tab, a byte over 0x7f: `\s` knows more
 * spaces than ASCII's), render() answers false and the caller renders the string instead.
 */
import { NamedUser, show, type TemplatePart } from './body-template.js';
import { copyBytes } from '../core/byte-view.js';

/** What BodySource.resolve returns for a value that is bytes: `into.raw[rawStart, rawEnd)` (UTF-8). */
export const RAW_VALUE = Symbol('raw body value');

/** The values of a record's placeholders. */
export interface BodySource {
  /**
   * A placeholder's value (as a ValueLookup gives it), or RAW_VALUE after setting `into`'s raw
   * range to the value's bytes.
   */
  resolve(name: string, namesAUser: boolean, into: BodyBytes): unknown;
}

const USER_WORD = Buffer.from('user ');
const QUESTION_MARK = 0x3f;
const SPACE = 0x20;
/** A scratch buffer grown past this is let go after the body that needed it. */
const KEEP_BYTES = 64 * 1024;

/** One body's bytes, rendered into a buffer reused from record to record. */
export class BodyBytes {
  buf = Buffer.allocUnsafe(1024);
  pos = 0;
  /** A raw value's bytes (set by a BodySource before it returns RAW_VALUE). */
  raw: Uint8Array = this.buf;
  rawStart = 0;
  rawEnd = 0;
  /** Where the open [section] starts, and the lowest place the word `user ` was taken from in it. */
  private sectionAt = 0;
  private strippedAt = Infinity;

  /**
   * The template's bytes from `source`'s values. False when its spaces need folding and it holds
   * whitespace other than ASCII spaces (then the string renderer's answer is the body).
   */
  render(parts: readonly TemplatePart[], source: BodySource): boolean {
    if (this.buf.length > KEEP_BYTES) this.buf = Buffer.allocUnsafe(1024);
    this.pos = 0;
    this.sectionAt = 0;
    this.renderParts(parts, source, false);
    return this.tidySpaces();
  }

  /** A string after what was rendered (a failure's suffix). */
  text(s: string): void {
    const n = s.length;
    this.room(n * 3);
    const buf = this.buf;
    let p = this.pos;
    for (let i = 0; i < n; i++) {
      const c = s.charCodeAt(i);
      if (c >= 0x80) {
        // (not ASCII: Buffer.write's UTF-8, lone surrogates and all, as the string path writes it)
        this.pos += buf.write(s, this.pos);
        return;
      }
      buf[p++] = c;
    }
    this.pos = p;
  }

  private renderParts(parts: readonly TemplatePart[], source: BodySource, strict: boolean): boolean {
    for (let k = 0; k < parts.length; k++) {
      const p = parts[k]!;
      if (p.kind === 'text') this.copy(p.bytes, 0, p.bytes.length);
      else if (p.kind === 'field') {
        if (this.field(p.names, p.users, source)) continue;
        if (strict) return false;
        this.room(1);
        this.buf[this.pos++] = QUESTION_MARK;
      } else {
        const at = this.pos;
        this.sectionAt = at;
        this.strippedAt = Infinity;
        if (!this.renderParts(p.parts, source, true)) {
          // the section goes, and with it any `user ` it took from the text before it
          if (this.strippedAt < at) this.copy(USER_WORD, 0, Math.min(5, at - this.strippedAt), Math.max(this.strippedAt, at - 5));
          this.pos = at;
        }
        this.sectionAt = 0;
      }
    }
    return true;
  }

  /** The first of `names` with a value, written; false when none has one. */
  private field(names: readonly string[], users: readonly boolean[], source: BodySource): boolean {
    for (let i = 0; i < names.length; i++) {
      const v = source.resolve(names[i]!, users[i]!, this);
      if (v === RAW_VALUE) {
        if (this.rawEnd === this.rawStart) continue; // '' shows as nothing
        this.copy(this.raw, this.rawStart, this.rawEnd);
        return true;
      }
      const s = show(v);
      if (s === undefined) continue;
      if (v instanceof NamedUser) this.leaveOutUserWord();
      this.text(s);
      return true;
    }
    return false;
  }

  /** withoutUserWord (body-template.ts) on the bytes so far. */
  private leaveOutUserWord(): void {
    const p = this.pos;
    const buf = this.buf;
    if (p < 5 || buf[p - 5] !== 0x75 || buf[p - 4] !== 0x73 || buf[p - 3] !== 0x65 || buf[p - 2] !== 0x72 || buf[p - 1] !== SPACE) return;
    if (p > 5 && buf[p - 6] !== SPACE) return;
    this.pos = p - 5;
    if (this.pos < this.sectionAt && this.pos < this.strippedAt) this.strippedAt = this.pos;
  }

  /** src[start, end) at `at` (the end by default). */
  private copy(src: Uint8Array, start: number, end: number, at = this.pos): void {
    const n = end - start;
    if (at === this.pos) this.room(n);
    const buf = this.buf;
    if (n <= 32) for (let i = start; i < end; i++) buf[at++] = src[i]!;
    else at += copyBytes(src, buf, at, start, end);
    if (at > this.pos) this.pos = at;
  }

  private room(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    const bigger = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + n));
    this.buf.copy(bigger, 0, 0, this.pos);
    this.buf = bigger;
  }

  /**
   * tidySpaces (body-template.ts) on the bytes: runs of spaces folded into one and the ends
   * trimmed, when a run or an edge space is there. False when that is needed and the body holds
   * a tab, a line break or a byte over 0x7f, which `\s` may count as a space too.
   */
  private tidySpaces(): boolean {
    const buf = this.buf;
    const end = this.pos;
    if (end === 0) return true;
    let needed = buf[0] === SPACE || buf[end - 1] === SPACE;
    for (let i = 1; !needed && i < end; i++) if (buf[i] === SPACE && buf[i - 1] === SPACE) needed = true;
    if (!needed) return true;
    for (let i = 0; i < end; i++) {
      const b = buf[i]!;
      if (b >= 0x80 || (b >= 0x09 && b <= 0x0d)) return false;
    }
    let out = 0;
    for (let i = 0; i < end; i++) {
      const b = buf[i]!;
      if (b === SPACE && (out === 0 || buf[out - 1] === SPACE)) continue;
      buf[out++] = b;
    }
    if (out > 0 && buf[out - 1] === SPACE) out--;
    this.pos = out;
    return true;
  }
}
