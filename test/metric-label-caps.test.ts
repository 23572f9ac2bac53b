/**
 * Labels whose values come from the data (event_type, attribute, reason) are capped per tenant:
 * made-up event types cannot create series without bound. The catalog's event types are always
 * labelled by name; values past the cap are counted under "(other)", and nothing is lost from
 * the totals.
 */
import { describe, it, expect, afterEach } from 'vitest';
import { writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { startOtlpReceiver, type OtlpReceiver } from './support/otlp-receiver.js';
import { tempDir, writeFixtureTree } from './support/activity-fixtures.js';
import { startDaemon, waitFor, metricValue, type DaemonProcess } from './support/daemon-process.js';
import { DaemonMetrics, MAX_DATA_LABEL_VALUES } from '../src/daemon/metrics.js';

let receiver: OtlpReceiver | undefined;
let daemon: DaemonProcess | undefined;
afterEach(async () => {
  if (daemon && daemon.child.exitCode === null) daemon.child.kill('SIGKILL');
  daemon = undefined;
  await receiver?.close();
});

/** Every sample of one metric: its labels and value. */
function samples(text: string, name: string): Array<{ labels: Record<string, string>; value: number }> {
  const out: Array<{ labels: Record<string, string>; value: number }> = [];
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[3] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!;
    out.push({ labels, value: Number(m[4]) });
  }
  return out;
}

describe('metric label caps', () => {
  it('1000 made-up event types: at most the cap of them are labels, the rest is "(other)"; catalog types keep their names', async () => {
    receiver = await startOtlpReceiver();
    const work = tempDir();
    const logs = join(work, 'logs');
    mkdirSync(logs, { recursive: true });
    const FLOOD = 1000;
    const lines = Array.from({ length: FLOOD }, (_, i) => JSON.stringify({ eventTime: '2026-11-29T10:00:00.000Z', eventType: `made_up_${i}`, [`odd_field_${i}`]: i, testSeq: 100_000 + i }));
    writeFileSync(join(logs, 'a-flood.ndjson'), lines.join('\n') + '\n');
    // known event types (from the object keys), read after the flood used up the cap
    const known = writeFixtureTree(logs, 4, 25);
    const config = join(work, 'config.yaml');
    writeFileSync(
      config,
      [
        `state: { dir: ${JSON.stringify(join(work, 'state'))} }`,
        'pipeline: { batchSize: 100 }',
        'tenants:',
        '  - id: acme',
        `    sources: [ { type: directory, path: ${JSON.stringify(logs)} } ]`,
        `    destinations: [ { type: otlp, endpoint: ${JSON.stringify(receiver.url)} } ]`,
      ].join('\n'),
    );
    daemon = await startDaemon(['--config', config]);
    const total = FLOOD + known.records.length;
    await receiver.waitForRecords(total, 30_000);
    const text = await waitFor('the counts of every record in /metrics', async () => {
      const t = (await daemon!.get('/metrics')).body;
      return samples(t, 'tao_events_by_type_total').reduce((n, s) => n + s.value, 0) === total ? t : undefined;
    });

    const byType = samples(text, 'tao_events_by_type_total');
    const madeUp = byType.filter((s) => s.labels.event_type!.startsWith('made_up_'));
    expect(madeUp).toHaveLength(MAX_DATA_LABEL_VALUES);
    expect(metricValue(text, 'tao_events_by_type_total', { tenant: 'acme', event_type: '(other)' })).toBe(FLOOD - MAX_DATA_LABEL_VALUES);
    for (const t of ['hist_access_view', 'login_authentication', 'add_delete_user_to_group', 'vizql_http_request']) {
      expect(metricValue(text, 'tao_events_by_type_total', { tenant: 'acme', event_type: t })).toBe(25);
    }
    expect(byType.length).toBeLessThanOrEqual(MAX_DATA_LABEL_VALUES + 4 + 1);

    // the drift metrics too: no label value past the cap, none carrying a made-up attribute past it
    const unknownTypes = samples(text, 'tao_unknown_event_types_total');
    expect(unknownTypes.length).toBeLessThanOrEqual(MAX_DATA_LABEL_VALUES + 1);
    expect(unknownTypes.reduce((n, s) => n + s.value, 0)).toBe(FLOOD);
    const unknownAttrs = samples(text, 'tao_unknown_attributes_total');
    expect(new Set(unknownAttrs.map((s) => s.labels.event_type)).size).toBeLessThanOrEqual(MAX_DATA_LABEL_VALUES + 4 + 1);
    expect(new Set(unknownAttrs.map((s) => s.labels.attribute)).size).toBeLessThanOrEqual(MAX_DATA_LABEL_VALUES + 1);
    expect(metricValue(text, 'tao_metric_label_values_capped_total', { tenant: 'acme', label: 'event_type' })).toBe(1);
    // every record still arrived, under its own event type
    expect(new Set(receiver.records().map((r) => r.attributes['tableau.event_type'] ?? r.eventName)).size).toBeGreaterThan(MAX_DATA_LABEL_VALUES);
  }, 90_000);

  it('dead-letter reasons and dropped event types are capped per tenant and label; another tenant has its own budget', async () => {
    const m = new DaemonMetrics({ maxDataLabelValues: 5 });
    m.dataLabels.setKnownEventTypes(['hist_access_view']);
    for (let i = 0; i < 20; i++) m.eventsDeadLettered.inc({ tenant: 'a', source: 's', reason: `reason ${String.fromCharCode(97 + i)}` });
    for (let i = 0; i < 3; i++) m.eventsDeadLettered.inc({ tenant: 'b', source: 's', reason: `reason ${String.fromCharCode(97 + i)}` }, 2);
    for (let i = 0; i < 10; i++) m.eventsDroppedByOverride.inc({ tenant: 'a', event_type: `t${i}` }, 1);
    m.eventsDroppedByOverride.inc({ tenant: 'a', event_type: 'hist_access_view' }, 7);
    const text = await m.registry.metrics();
    const dl = samples(text, 'tao_events_dead_lettered_total');
    expect(dl.filter((s) => s.labels.tenant === 'a')).toHaveLength(6);
    expect(metricValue(text, 'tao_events_dead_lettered_total', { tenant: 'a', reason: '(other)' })).toBe(15);
    expect(metricValue(text, 'tao_events_dead_lettered_total', { tenant: 'a', reason: 'reason e' })).toBe(1);
    expect(metricValue(text, 'tao_events_dead_lettered_total', { tenant: 'a', reason: 'reason f' })).toBeUndefined();
    expect(dl.filter((s) => s.labels.tenant === 'b').map((s) => s.value)).toEqual([2, 2, 2]);
    const dropped = samples(text, 'tao_events_dropped_by_override_total');
    expect(dropped).toHaveLength(5 + 1 + 1);
    expect(metricValue(text, 'tao_events_dropped_by_override_total', { tenant: 'a', event_type: 'hist_access_view' })).toBe(7);
    expect(metricValue(text, 'tao_events_dropped_by_override_total', { tenant: 'a', event_type: '(other)' })).toBe(5);
    expect(metricValue(text, 'tao_metric_label_values_capped_total', { tenant: 'a', label: 'reason' })).toBe(1);
    expect(metricValue(text, 'tao_metric_label_values_capped_total', { tenant: 'b', label: 'reason' })).toBeUndefined();
  });
});
