/**
 * `map` and `run` take the same chunk path (objectChunks + ChunkProcessor), so they agree on a
 * file: a UTF-8 byte order mark, CRLF line ends, a blank line and a bad line. Both through the
 * real CLI; `run --once` writes to a file destination (OTLP JSON, as `map` prints).
 */
import { describe, it, expect } from 'vitest';
import { mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCli } from './support/cli-process.js';
import { tempDir } from './support/activity-fixtures.js';

interface OtlpJsonValue {
  stringValue?: string;
  intValue?: string;
  boolValue?: boolean;
}
interface OtlpJsonRecord {
  timeUnixNano: string;
  observedTimeUnixNano?: string;
  eventName?: string;
  severityNumber?: number;
  body?: OtlpJsonValue;
  attributes: Array<{ key: string; value: OtlpJsonValue }>;
}
interface OtlpJsonRequest {
  resourceLogs: Array<{ resource: { attributes: Array<{ key: string; value: OtlpJsonValue }> }; scopeLogs: Array<{ logRecords: OtlpJsonRecord[] }> }>;
}

/**
 * Every record of OTLP JSON requests (one per line), with its resource, without what differs by
 * design: the observed time (the moment of mapping) and `log.record.uid` (from the file's
 * identity in `run`, from the path given in `map`).
 */
function records(ndjson: string): unknown[] {
  const out: unknown[] = [];
  for (const line of ndjson.split('\n')) {
    if (line.trim() === '') continue;
    const req = JSON.parse(line) as OtlpJsonRequest;
    for (const rl of req.resourceLogs) {
      const resource = Object.fromEntries(rl.resource.attributes.map((a) => [a.key, a.value]));
      for (const sl of rl.scopeLogs) {
        for (const r of sl.logRecords) {
          const { observedTimeUnixNano: _observed, attributes, ...rest } = r;
          out.push({ ...rest, resource, attributes: Object.fromEntries(attributes.filter((a) => a.key !== 'log.record.uid').map((a) => [a.key, a.value])) });
        }
      }
    }
  }
  return out;
}

describe('map and run agree', () => {
  it('on a file with a byte order mark, CRLF line ends, a blank line and a bad line', async () => {
    const work = tempDir();
    const logs = join(work, 'logs');
    const dir = join(logs, 'pod=p', 'siteLuid=s-1', 'y=2026', 'm=11', 'd=30', 'h=10', 'eventType=hist_delete_workbook');
    mkdirSync(dir, { recursive: true });
    const file = join(dir, 'f.txt');
    const lines = [
      JSON.stringify({ eventTime: '2026-11-30T10:00:00.123456789Z', actorUserLuid: 'u-1', workbookLuid: 'wb-1', eventOutcome: 'success' }),
      '',
      JSON.stringify({ eventTime: '2026-11-30T10:00:01Z', actorUserLuid: 'u-2', workbookLuid: 'wb-2', eventOutcome: 'internal_error' }),
      '{not json',
      JSON.stringify({ eventTime: '2026-11-30T10:00:02Z', actorUserLuid: 'u-3', workbookLuid: 'wb-3', eventOutcome: 'success' }),
    ];
    writeFileSync(file, '\ufeff' + lines.join('\r\n') + '\r\n');

    const mapped = await runCli(['map', file, '--tenant', 'acme']);
    // the bad line, by its number in the file (the blank line counts), and nothing else
    expect(mapped.stderr.trim()).toMatch(new RegExp(`^${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:4: invalid JSON`));
    expect(mapped.stderr.trim().split('\n')).toHaveLength(1);
    expect(mapped.code).toBe(1);

    const out = join(work, 'out.ndjson');
    const config = join(work, 'config.yaml');
    writeFileSync(
      config,
      [
        `state: { dir: ${JSON.stringify(join(work, 'state'))} }`,
        'tenants:',
        '  - id: acme',
        `    sources: [ { type: directory, path: ${JSON.stringify(logs)} } ]`,
        `    destinations: [ { type: file, path: ${JSON.stringify(out)} } ]`,
      ].join('\n'),
    );
    const ran = await runCli(['run', '--once', '--config', config]);
    expect(ran.code, ran.stderr).toBe(0);

    const fromMap = records(mapped.stdout);
    const fromRun = records(readFileSync(out, 'utf8'));
    expect(fromMap).toHaveLength(3);
    expect(fromMap).toEqual(fromRun);
    // the first line's record is there (its byte order mark not taken for part of the JSON)
    expect(fromMap[0]).toMatchObject({ timeUnixNano: '1796032800123456789', attributes: { 'tableau.workbook_luid': { stringValue: 'wb-1' } } });

    // run dead-lettered the same line
    const letters = readFileSync(join(work, 'state', 'acme', 'dead-letter', readdirOne(join(work, 'state', 'acme', 'dead-letter'))), 'utf8');
    const letter = JSON.parse(letters.trim().split('\n')[0]!) as { line: number; reason: string };
    expect(letter.line).toBe(4);
    expect(letter.reason).toMatch(/^invalid JSON/);
  }, 60_000);
});

function readdirOne(dir: string): string {
  const files = readdirSync(dir).filter((f) => f.endsWith('.ndjson'));
  expect(files).toHaveLength(1);
  return files[0]!;
}
