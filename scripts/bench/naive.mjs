// @ts-check
/**
 * Benchmark "naive" case: what a user would write with the OpenTelemetry JS SDK. For each
 * object (gunzip by magic bytes), for each line: JSON.parse, then logger.emit() with the parsed
 * record as the attributes, through a LoggerProvider + BatchLogRecordProcessor + the OTLP/HTTP
 * protobuf exporter; forceFlush at the end. Run as its own process by run-bench.ts:
 *
 *   node scripts/bench/naive.mjs CORPUS_DIR LOGS_URL [MAX_QUEUE_SIZE|default]
 *
 * The exporter is wrapped to count the records handed to it, so records the processor dropped
 * (queue full) are `emitted - exported`. Prints one JSON line on stdout.
 */
import fsp from 'node:fs/promises';
import zlib from 'node:zlib';
import { corpusFiles } from './corpus-files.mjs';
import { promisify } from 'node:util';
import { SeverityNumber } from '@opentelemetry/api-logs';
import { LoggerProvider, BatchLogRecordProcessor } from '@opentelemetry/sdk-logs';
import { OTLPLogExporter } from '@opentelemetry/exporter-logs-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';

const gunzip = promisify(zlib.gunzip);


const [root, url, queueArg] = process.argv.slice(2);
if (!root || !url) {
  process.stderr.write('usage: node naive.mjs CORPUS_DIR LOGS_URL [MAX_QUEUE_SIZE|default]\n');
  process.exit(2);
}

const inner = new OTLPLogExporter({ url });
let exported = 0;
let failed = 0;
let requests = 0;
/** Counts what reaches the exporter; everything else is the SDK's. @type {import('@opentelemetry/sdk-logs').LogRecordExporter} */
const exporter = {
  export(records, done) {
    exported += records.length;
    requests++;
    inner.export(records, (result) => {
      if (result.code !== 0) failed += records.length;
      done(result);
    });
  },
  shutdown: () => inner.shutdown(),
  forceFlush: () => inner.forceFlush(),
};

const processor = new BatchLogRecordProcessor(
  queueArg && queueArg !== 'default' ? { exporter, maxQueueSize: Number(queueArg) } : { exporter },
);
const provider = new LoggerProvider({
  resource: resourceFromAttributes({ 'service.name': 'tableau-cloud' }),
  processors: [processor],
});
const logger = provider.getLogger('tableau-activity-naive', '0.0.1');

/** @param {unknown} outcome */
function severityOf(outcome) {
  if (outcome === 'internal_error') return { severityNumber: SeverityNumber.ERROR, severityText: 'ERROR' };
  if (outcome === 'unauthorized' || outcome === 'client_error') return { severityNumber: SeverityNumber.WARN, severityText: 'WARN' };
  return { severityNumber: SeverityNumber.INFO, severityText: 'INFO' };
}

const started = process.hrtime.bigint();
let emitted = 0;
let bytes = 0;
for (const file of corpusFiles(root)) {
  const eventType = /\/eventType=([^/]+)\//.exec(file)?.[1];
  const raw = await fsp.readFile(file);
  const buf = raw.length >= 2 && raw[0] === 0x1f && raw[1] === 0x8b ? await gunzip(raw) : raw;
  bytes += buf.length;
  for (const line of buf.toString('utf8').split('\n')) {
    const l = line.endsWith('\r') ? line.slice(0, -1) : line;
    if (l.length === 0) continue;
    const rec = JSON.parse(l);
    const type = rec.eventType ?? eventType ?? 'unknown';
    logger.emit({
      eventName: `tableau.${type}`,
      timestamp: Date.parse(rec.eventTime),
      ...severityOf(rec.eventOutcome),
      body: `${type} by ${rec.actorUserLuid ?? rec.initiatingUserId ?? 'unknown'} (${rec.eventOutcome ?? 'no outcome'})`,
      attributes: rec,
    });
    emitted++;
  }
}
await provider.forceFlush();
const seconds = Number(process.hrtime.bigint() - started) / 1e9;
await provider.shutdown();
process.stdout.write(
  JSON.stringify({ events: emitted, bytes, seconds, exported, dropped: emitted - exported, failed, requests, maxQueueSize: queueArg ?? 'default', maxRssBytes: process.resourceUsage().maxRSS * 1024 }) + '\n',
);
