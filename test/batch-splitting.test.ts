/**
 * runSplittingOnFailure on a batch of several segments (objects): the halves' results merged
 * back into one for the batch, each dead letter naming its own segment and line, counts summed,
 * every other record encoded once (decoded by the test receiver's protobuf decoder).
 */
import { describe, it, expect } from 'vitest';
import { loadCatalog } from '../src/mapping/catalog.js';
import { ChunkProcessor, type ChunkTask } from '../src/pipeline/chunk-processor.js';
import { ChunkProcessingError } from '../src/pipeline/worker-pool.js';
import { runSplittingOnFailure } from '../src/pipeline/batch-splitting.js';
import { decodeOtlpLogsBody } from './support/otlp-receiver.js';

const processor = new ChunkProcessor({ catalog: loadCatalog(), scope: { name: 't', version: '0' }, tenants: [{ id: 't' }] });

const rec = (obj: number, line: number, poison = false): string =>
  JSON.stringify({ eventTime: '2026-11-29T10:00:00Z', eventType: 'hist_access_view', actorUserLuid: 'u', obj, line, ...(poison ? { poison: 'yes' } : {}) });

describe('runSplittingOnFailure', () => {
  it('several segments: dead letters keep their segment and line; the rest is encoded once', async () => {
    // three objects (segments) of 7, 1 and 12 lines, the second starting at line 40, with blank lines
    const seg = (obj: number, firstLine: number, n: number, poison: number[]): string =>
      Array.from({ length: n }, (_, i) => (i === 3 ? '' : rec(obj, firstLine + i, poison.includes(firstLine + i)))).join('\n') + '\n';
    const texts = [seg(0, 1, 7, [2, 7]), seg(1, 40, 1, [40]), seg(2, 1, 12, [12])];
    const task: ChunkTask = {
      tenant: 't',
      segments: texts.map((t, i) => ({ keyInfo: {}, uidPrefix: `o${i}`, firstLine: i === 1 ? 40 : 1, bytes: Buffer.from(t) })),
      encodings: [{ kind: 'otlp-protobuf' }],
      observedTimeUnixNano: '1',
    };
    let runs = 0;
    const result = await runSplittingOnFailure(async (t) => {
      runs++;
      const bytes = t.segments.map((s) => s.bytes);
      if (bytes.some((b) => Buffer.from(b).includes('"poison"'))) throw new ChunkProcessingError('Error: injected', bytes.map((b) => Uint8Array.prototype.slice.call(b)), false);
      const r = processor.process(t);
      // (bodies from the processor's reused writer: copied, as the pool does)
      return { ...r, payloads: r.payloads.map((ps) => ps.map((p) => Uint8Array.prototype.slice.call(p))) };
    }, task);
    expect(result.deadLetters.map((d) => [d.segment, d.line])).toEqual([
      [0, 2],
      [0, 7],
      [1, 40],
      [2, 12],
    ]);
    for (const d of result.deadLetters) expect(JSON.parse(d.raw)).toMatchObject({ obj: d.segment, line: d.line });
    // 7 + 1 + 12 lines, one blank in the first and the third: 18 read, 4 dead-lettered
    expect(result.linesRead).toBe(18);
    expect(result.records).toBe(14);
    expect(result.byType.hist_access_view).toBe(14);
    const records = result.payloads[0]!.flatMap((b) => decodeOtlpLogsBody(b, 'protobuf'));
    const got = records.map((r) => `${String(r.attributes['tableau.obj'])}:${String(r.attributes['tableau.line'])}`).sort();
    expect(got).toEqual(['0:1', '0:3', '0:5', '0:6', '2:1', '2:2', '2:3', '2:5', '2:6', '2:7', '2:8', '2:9', '2:10', '2:11'].sort());
    expect(records.map((r) => r.attributes['log.record.uid'])).toContain('o2:11');
    expect(result.segments!.map((b) => Buffer.from(b).toString())).toEqual(texts);
    expect(runs).toBeGreaterThan(4);
    // each merged body starts at its part's first record line, so a body a destination rejects
    // can be isolated on its own lines (ChunkResult.bodyStarts)
    const starts = result.bodyStarts![0]!;
    expect(starts).toHaveLength(result.payloads[0]!.length);
    result.payloads[0]!.forEach((body, k) => {
      const first = decodeOtlpLogsBody(body, 'protobuf')[0]!;
      const seg = starts[k]!.segment;
      const line = Number(first.attributes['tableau.line']);
      expect(Number(first.attributes['tableau.obj'])).toBe(seg);
      // the part may begin on a blank or dead-lettered line just before its first record
      expect(starts[k]!.line).toBeLessThanOrEqual(line);
      expect(line - starts[k]!.line).toBeLessThanOrEqual(2);
    });
  });

  it('other errors are not split', async () => {
    const task: ChunkTask = { tenant: 't', segments: [{ keyInfo: {}, uidPrefix: 'o', firstLine: 1, bytes: Buffer.from(rec(0, 1) + '\n') }], encodings: [{ kind: 'otlp-protobuf' }], observedTimeUnixNano: '1' };
    await expect(runSplittingOnFailure(() => Promise.reject(new Error('encode worker pool is closed')), task)).rejects.toThrow('closed');
  });
});
