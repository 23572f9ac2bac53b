/**
 * `type: file`: each batch as one line of OTLP JSON (an ExportLogsServiceRequest, the format of
 * the OpenTelemetry Collector's file exporter), appended to a file or written to stdout
 * (`path: "-"`). For trying the daemon without a collector, and for archiving.
 *
 * A file the destination creates is readable by its owner only (0600, like the state files):
 * the records are the tenant's activity data.
 */
import { open, type FileHandle } from 'node:fs/promises';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Destination, SendOutcome } from '../destination.js';
import type { MappedLogRecord } from '../../mapping/log-record.js';
import { otlpJsonRequest, type OtelLogRecordBuilder } from '../otel-log-records.js';
import type { EncodingSpec } from '../encodings.js';
import type { FileDestinationConfig } from './config.js';

export { fileDestinationConfigSchema, type FileDestinationConfig } from './config.js';

const decoder = new TextDecoder();

/** Records → one OTLP JSON ExportLogsServiceRequest, as text. */
export function toOtlpJson(builder: OtelLogRecordBuilder, records: readonly MappedLogRecord[]): string {
  return decoder.decode(otlpJsonRequest(builder, records));
}

const NEWLINE = Buffer.from('\n');
/** Owner read/write only (the mode of a file the destination creates; an existing file keeps its own). */
const FILE_MODE = 0o600;

export class FileDestination implements Destination {
  readonly name: string;
  readonly encoding: EncodingSpec = { kind: 'otlp-json' };
  private handle: FileHandle | null = null;

  constructor(private readonly config: FileDestinationConfig) {
    this.name = config.name ?? (config.path === '-' ? 'stdout' : 'file');
  }

  async send(payload: Uint8Array): Promise<SendOutcome> {
    const line = Buffer.concat([payload, NEWLINE]);
    if (this.config.path === '-') {
      await new Promise<void>((resolve, reject) => process.stdout.write(line, (err) => (err ? reject(err) : resolve())));
      return { kind: 'done' };
    }
    try {
      if (!this.handle) {
        mkdirSync(dirname(this.config.path), { recursive: true });
        this.handle = await open(this.config.path, 'a', FILE_MODE);
      }
      await this.handle.write(line);
      await this.handle.datasync();
      return { kind: 'done' };
    } catch (err) {
      return { kind: 'retry', reason: `cannot write ${this.config.path}: ${(err as NodeJS.ErrnoException).code ?? String(err)}` };
    }
  }

  /** The file can be opened for appending (nothing is written). */
  async probe(): Promise<SendOutcome> {
    if (this.config.path === '-' || this.handle) return { kind: 'done' };
    try {
      mkdirSync(dirname(this.config.path), { recursive: true });
      this.handle = await open(this.config.path, 'a', FILE_MODE);
      return { kind: 'done' };
    } catch (err) {
      return { kind: 'retry', reason: `cannot write ${this.config.path}: ${(err as NodeJS.ErrnoException).code ?? String(err)}` };
    }
  }

  async shutdown(): Promise<void> {
    const h = this.handle;
    this.handle = null;
    await h?.close();
  }
}
