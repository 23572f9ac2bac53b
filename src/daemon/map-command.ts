/**
 * `map FILE…`: the mapped records of activity-log files as OTLP JSON on stdout (one
 * ExportLogsServiceRequest per line, up to 1000 records each). No export, no state. Lines that
 * cannot be mapped are reported on stderr as `FILE:LINE: reason` and make the exit code 1.
 *
 * The files take the same path as in `run`, in-process: bytes (gunzipped by magic bytes) →
 * line-aligned chunks (objectChunks, with run's line and object limits) → ChunkProcessor
 * (lines, byte order mark, CRLF, JSON, mapping, encoding), so `map` and `run` cannot disagree
 * about a file.
 */
import { createReadStream } from 'node:fs';
import { resolve } from 'node:path';
import { loadCatalog } from '../mapping/catalog.js';
import { decompressed } from '../decoding/object-lines.js';
import { objectChunks } from '../decoding/object-chunks.js';
import { parseObjectKey } from '../decoding/object-key.js';
import { uidPrefixFor } from '../sources/source.js';
import { ChunkProcessor } from '../pipeline/chunk-processor.js';
import { DEFAULT_PIPELINE_SETTINGS } from '../pipeline/pipeline-settings.js';
import { connectorScope } from './version.js';

export interface MapOptions {
  tenant: string;
  mappingsDir?: string;
}

/** Records per output line (ExportLogsServiceRequest). */
const RECORDS_PER_REQUEST = 1000;

export async function mapCommand(files: string[], options: MapOptions, out: NodeJS.WritableStream = process.stdout, err: NodeJS.WritableStream = process.stderr): Promise<number> {
  const catalog = loadCatalog(options.mappingsDir ? resolve(options.mappingsDir) : undefined);
  const processor = new ChunkProcessor({ catalog, scope: connectorScope(), tenants: [{ id: options.tenant }] });
  const settings = DEFAULT_PIPELINE_SETTINGS;
  let bad = 0;
  const write = (body: Uint8Array): Promise<void> => new Promise((res, rej) => out.write(Buffer.concat([body, NEWLINE]), (e) => (e ? rej(e) : res())));
  for (const file of files) {
    const key = file.split(/[\\/]/).join('/');
    const keyInfo = parseObjectKey(key);
    const uidPrefix = uidPrefixFor(`directory\n${key}`);
    try {
      const chunks = objectChunks(decompressed(createReadStream(file)), {
        maxLines: RECORDS_PER_REQUEST,
        maxBytes: settings.maxBatchBytes,
        maxLineBytes: settings.maxLineBytes,
        maxObjectBytes: settings.maxObjectBytes,
        maxObjectLines: settings.maxObjectLines,
      });
      for await (const item of chunks) {
        if (item.kind === 'limit') {
          bad++;
          err.write(`${file}:${item.limit.line}: ${item.limit.reason}\n`);
          break;
        }
        if (item.kind === 'oversize') {
          bad++;
          err.write(`${file}:${item.oversize.line}: line of ${item.oversize.bytes} bytes exceeds maxLineBytes ${settings.maxLineBytes}\n`);
          continue;
        }
        const result = processor.process({
          tenant: options.tenant,
          segments: [{ keyInfo, uidPrefix, firstLine: item.chunk.firstLine, bytes: item.chunk.bytes }],
          encodings: [{ kind: 'otlp-json' }],
          observedTimeUnixNano: (BigInt(Date.now()) * 1_000_000n).toString(),
        });
        for (const dl of result.deadLetters) {
          bad++;
          err.write(`${file}:${dl.line}: ${dl.reason}\n`);
        }
        if (result.records > 0) for (const body of result.payloads[0]!) await write(body);
      }
    } catch (e) {
      bad++;
      err.write(`${file}: cannot read: ${(e as Error).message}\n`);
    }
  }
  return bad > 0 ? 1 : 0;
}

const NEWLINE = Buffer.from('\n');
