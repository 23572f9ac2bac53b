/**
 * `map FILE…`: the mapped records of activity-log files as OTLP JSON on stdout (one
 * ExportLogsServiceRequest per line, up to 1000 records each). No export, no state. Lines that
 * cannot be mapped are reported on stderr as `FILE:LINE: reason` and make the exit code 1.
 */
import { createReadStream } from 'node:fs';
import { resolve } from 'node:path';
import { loadCatalog } from '../mapping/catalog.js';
import { RecordMapper } from '../mapping/record-mapper.js';
import type { MappedLogRecord } from '../mapping/log-record.js';
import { objectLines } from '../decoding/object-lines.js';
import { parseJsonExact } from '../decoding/exact-json.js';
import { parseObjectKey } from '../decoding/object-key.js';
import { uidPrefixFor } from '../sources/source.js';
import { OtelLogRecordBuilder } from '../export/otel-log-records.js';
import { toOtlpJson } from '../export/file/destination.js';
import { connectorScope } from './version.js';

export interface MapOptions {
  tenant: string;
  mappingsDir?: string;
}

export async function mapCommand(files: string[], options: MapOptions, out: NodeJS.WritableStream = process.stdout, err: NodeJS.WritableStream = process.stderr): Promise<number> {
  const catalog = loadCatalog(options.mappingsDir ? resolve(options.mappingsDir) : undefined);
  const mapper = new RecordMapper(catalog, { tenantId: options.tenant });
  const builder = new OtelLogRecordBuilder(connectorScope());
  let bad = 0;
  const write = (records: MappedLogRecord[]): Promise<void> =>
    new Promise((res, rej) => out.write(toOtlpJson(builder, records) + '\n', (e) => (e ? rej(e) : res())));
  for (const file of files) {
    const key = file.split(/[\\/]/).join('/');
    const ctx = { keyInfo: parseObjectKey(key), uidPrefix: uidPrefixFor(`directory\n${key}`) };
    let batch: MappedLogRecord[] = [];
    try {
      for await (const items of objectLines(createReadStream(file))) {
        const observed = BigInt(Date.now()) * 1_000_000n;
        for (const item of items) {
          if (item.kind === 'oversize') {
            bad++;
            err.write(`${file}:${item.line}: line of ${item.bytes} bytes is too long\n`);
            continue;
          }
          let value: unknown;
          try {
            value = parseJsonExact(item.text);
          } catch (e) {
            bad++;
            err.write(`${file}:${item.line}: invalid JSON: ${(e as Error).message}\n`);
            continue;
          }
          const r = mapper.map(value, item.line, ctx, observed);
          if (!r.ok && r.dropped) continue;
          if (!r.ok) {
            bad++;
            err.write(`${file}:${item.line}: ${r.reason}\n`);
            continue;
          }
          batch.push(r.record);
          if (batch.length >= 1000) {
            await write(batch);
            batch = [];
          }
        }
      }
    } catch (e) {
      bad++;
      err.write(`${file}: cannot read: ${(e as Error).message}\n`);
    }
    if (batch.length > 0) await write(batch);
  }
  return bad > 0 ? 1 : 0;
}
