/**
 * Dead letters: what could not be delivered, kept under the state directory for a person to
 * look at and replay. Lines that are not valid records (with object, line number, reason and the
 * raw line) and batches a destination rejected for good (with its response). One NDJSON file per
 * UTC day: `<state>/<tenant>/dead-letter/YYYY-MM-DD.ndjson`. A letter is written whole or not at
 * all: `write` throws (e.g. disk full) and the pipeline waits and tries again.
 */
import { mkdirSync, openSync, writeSync, fsyncSync, closeSync, fstatSync, ftruncateSync } from 'node:fs';
import { join } from 'node:path';
import { scrubSecrets } from '../daemon/secrets.js';

export interface BadLineLetter {
  kind: 'line';
  source: string;
  object: string;
  line: number;
  reason: string;
  raw: string;
  /** The object's identity prefix of `log.record.uid` (`<uidPrefix>:<line>`), so a replay sends the same uid. */
  uidPrefix?: string;
}

/** One record of a rejected batch, with what a replay needs to send it again under the same `log.record.uid`. */
export interface DeadLetteredRecord {
  object: string;
  uidPrefix: string;
  line: number;
  raw: string;
}

export interface RejectedBatchLetter {
  kind: 'batch';
  destination: string;
  reason: string;
  status?: number;
  response?: string;
  /** Where the batch's lines came from. */
  objects: Array<{ object: string; firstLine: number; lastLine: number }>;
  /** The source lines of the batch (letters written before `records` existed; kept for reading old files). */
  lines: string[];
  /** The records at fault, each with its object, uid prefix and line (a replay sends exactly these). */
  records?: DeadLetteredRecord[];
}

export type DeadLetter = BadLineLetter | RejectedBatchLetter;

export class DeadLetterStore {
  private fd: number | null = null;
  private day = '';
  private unsynced = false;
  count = 0;

  constructor(readonly dir: string) {}

  write(letter: DeadLetter): void {
    const now = new Date();
    const day = now.toISOString().slice(0, 10);
    if (this.fd === null || day !== this.day) {
      this.close();
      mkdirSync(this.dir, { recursive: true });
      this.fd = openSync(join(this.dir, `${day}.ndjson`), 'a', 0o600);
      this.day = day;
    }
    // what a destination answered may quote a credential (a proxy echoing a header): scrubbed
    const safe: DeadLetter =
      letter.kind === 'batch'
        ? { ...letter, reason: scrubSecrets(letter.reason), ...(letter.response !== undefined ? { response: scrubSecrets(letter.response) } : {}) }
        : { ...letter, reason: scrubSecrets(letter.reason) };
    const data = Buffer.from(JSON.stringify({ time: now.toISOString(), ...safe }, bigintReplacer) + '\n');
    // The whole line or nothing: a short write (disk full) is continued, and a write that fails
    // is taken back, so the file never holds a torn line that the next letter would be glued to.
    const start = fstatSync(this.fd).size;
    let written = 0;
    try {
      while (written < data.length) written += writeSync(this.fd, data, written, data.length - written);
    } catch (err) {
      try {
        ftruncateSync(this.fd, start);
      } catch {
        /* nothing more to do: the caller tries again */
      }
      throw err;
    }
    this.unsynced = true;
    this.count++;
  }

  /** Make written letters durable; called before a checkpoint that moves past them is saved. */
  sync(): void {
    if (this.fd !== null && this.unsynced) {
      fsyncSync(this.fd);
      this.unsynced = false;
    }
  }

  close(): void {
    if (this.fd !== null) {
      this.sync();
      closeSync(this.fd);
      this.fd = null;
    }
  }
}

export function bigintReplacer(_key: string, value: unknown): unknown {
  return typeof value === 'bigint' ? value.toString() : value;
}
