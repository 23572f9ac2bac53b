/**
 * The OCSF attributes as they arrive: records mapped the way the pipeline maps them (the line's
 * bytes scanned in place and written straight into OTLP protobuf) and the object path
 * (map() + encodeLogsRequest), both decoded by the test receiver's own protobuf schema. OCSF is
 * pinned to 1.3.0: class_uid, activity_id (from the record's own field where the type says so),
 * type_uid = class_uid × 100 + activity_id, status_id of the outcome, and the version.
 */
import { describe, it, expect } from 'vitest';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { bundledMappingsDir, loadCatalog } from '../src/mapping/catalog.js';
import { RecordMapper } from '../src/mapping/record-mapper.js';
import { FlatJsonLine } from '../src/decoding/flat-json-line.js';
import { parseObjectKey } from '../src/decoding/object-key.js';
import { encodeLogsRequest } from '../src/export/otlp-protobuf/object-encoder.js';
import { DirectLogsRequestWriter } from '../src/export/otlp-protobuf/direct-writer.js';
import { decodeOtlpLogsBody, type ReceivedLogRecord } from './support/otlp-receiver.js';
import type { MappedLogRecord } from '../src/mapping/log-record.js';

const catalog = loadCatalog();
const scope = { name: 'tableau-activity-otel', version: '9.9.9' };
const OBSERVED = 1_796_000_000_000_000_000n;
const SITE = '8c2f4a6e-1b3d-4f5a-9e7c-0d1e2f3a4b5c';
const TIME = '2026-11-29T10:11:12.123Z';

/** One record of `eventType`, through both encodings; returns the decoded record (both paths must agree). */
function arrive(eventType: string, fields: Record<string, unknown>, family: 'site' | 'tenant' = 'site'): ReceivedLogRecord {
  const key = family === 'site' ? `logs/siteLuid=${SITE}/eventType=${eventType}/part-0.json` : `logs/tenant/eventType=${eventType}/part-0.json`;
  const ctx = { keyInfo: parseObjectKey(key), uidPrefix: 'obj' };
  const record = { eventTime: TIME, eventType, ...(family === 'site' ? { siteLuid: SITE } : {}), ...fields };
  const bytes = Buffer.from(JSON.stringify(record));

  const lineMapper = new RecordMapper(catalog, { tenantId: 't1' });
  const writer = new DirectLogsRequestWriter(scope);
  const scanned = new FlatJsonLine();
  expect(scanned.scan(bytes, 0, bytes.length)).toBe(true);
  const direct = lineMapper.mapLineDirect(scanned, 1, ctx, OBSERVED, writer);
  expect(direct.ok).toBe(true);
  const [viaLine] = decodeOtlpLogsBody(writer.finish()!, 'protobuf');

  const objectMapper = new RecordMapper(catalog, { tenantId: 't1' });
  const mapped = objectMapper.map(record, 1, ctx, OBSERVED);
  if (!mapped.ok) throw new Error(mapped.reason);
  const [viaObject] = decodeOtlpLogsBody(encodeLogsRequest([mapped.record as MappedLogRecord], scope), 'protobuf');
  expect(viaObject!.attributes).toEqual(viaLine!.attributes);
  return viaLine!;
}

/** The tableau.ocsf.* attributes of a decoded record, each checked to be an OTLP int (the version a string). */
function ocsf(r: ReceivedLogRecord): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(r.attributes)) {
    if (!k.startsWith('tableau.ocsf.')) continue;
    expect(r.attributeKinds[k], k).toBe(k === 'tableau.ocsf.version' ? 'string' : 'int');
    out[k.slice('tableau.ocsf.'.length)] = typeof v === 'bigint' ? Number(v) : v;
  }
  return out;
}

describe('OCSF 1.3.0 attributes through the OTLP protobuf encodings', () => {
  it('add_delete_user_to_group: the activity is what groupOperation says (3 Add User, 4 Remove User), 99 Other when it says nothing known', () => {
    const base = { actorUserLuid: 'u-admin', groupLuid: 'g-1', userLuid: 'u-2', eventOutcome: 'success' };
    expect(ocsf(arrive('add_delete_user_to_group', { ...base, groupOperation: 'add' }))).toEqual({
      class_uid: 3006,
      activity_id: 3,
      type_uid: 300603,
      status_id: 1,
      version: '1.3.0',
    });
    expect(ocsf(arrive('add_delete_user_to_group', { ...base, groupOperation: 'Delete' }))).toMatchObject({ activity_id: 4, type_uid: 300604 });
    expect(ocsf(arrive('add_delete_user_to_group', { ...base, groupOperation: 'rename' }))).toMatchObject({ activity_id: 99, type_uid: 300699 });
    expect(ocsf(arrive('add_delete_user_to_group', base))).toMatchObject({ activity_id: 99, type_uid: 300699 });
  });

  it('create/delete types take Create and Delete from their operation field', () => {
    expect(ocsf(arrive('create_delete_group', { groupLuid: 'g', groupOperation: 'create' }))).toMatchObject({ class_uid: 3006, activity_id: 6, type_uid: 300606 });
    expect(ocsf(arrive('create_delete_group', { groupLuid: 'g', groupOperation: 'delete' }))).toMatchObject({ activity_id: 5, type_uid: 300605 });
    expect(ocsf(arrive('user_create_delete', { targetUserLuid: 'u', userOperation: 'create' }))).toMatchObject({ class_uid: 3001, activity_id: 1, type_uid: 300101 });
    expect(ocsf(arrive('user_create_delete', { targetUserLuid: 'u', userOperation: 'delete' }))).toMatchObject({ activity_id: 6, type_uid: 300106 });
    expect(ocsf(arrive('activity_log_settings_change', { operationType: 'update' }))).toMatchObject({ class_uid: 3004, activity_id: 3, type_uid: 300403 });
  });

  it('site and schedule state changes carry their exact Entity Management activity (not 99 Other)', () => {
    expect(ocsf(arrive('hist_activate_site', { siteEventLuid: 's' }))).toMatchObject({ class_uid: 3004, activity_id: 10, type_uid: 300410 });
    expect(ocsf(arrive('hist_suspend_site', { siteEventLuid: 's' }))).toMatchObject({ activity_id: 12, type_uid: 300412 });
    expect(ocsf(arrive('reactivate_site', { eventId: 'e1', eventVersion: '1' }, 'tenant'))).toMatchObject({ activity_id: 13, type_uid: 300413 });
    expect(ocsf(arrive('hist_enable_schedule', {}))).toMatchObject({ activity_id: 8, type_uid: 300408 });
    expect(ocsf(arrive('hist_disable_linked_task_schedule', {}))).toMatchObject({ activity_id: 9, type_uid: 300409 });
  });

  it('status_id: 1 Success, 2 Failure (a failed outcome or a failure field), 0 Unknown when the record says nothing', () => {
    const status = (eventType: string, fields: Record<string, unknown>) => ocsf(arrive(eventType, fields)).status_id;
    expect(status('hist_activate_site', { eventOutcome: 'success' })).toBe(1);
    expect(status('hist_activate_site', { eventOutcome: 'client_error' })).toBe(2);
    expect(status('hist_activate_site', { eventOutcome: 'internal_error' })).toBe(2);
    expect(status('hist_activate_site', {})).toBe(0);
    expect(status('add_delete_user_to_group', { isError: true, groupOperation: 'add' })).toBe(2);
    expect(status('add_delete_user_to_group', { isError: false, groupOperation: 'add' })).toBe(1);
    // sign-in events: eventOutcome is null, their status field says what happened
    expect(status('login_authentication', { status: 'failure' })).toBe(2);
    expect(status('login_authentication', { status: 'Success' })).toBe(1);
    expect(status('login_authentication', { eventOutcome: null })).toBe(0);
    // Failure whenever the record carries error.type, whatever made it a failure
    const withCode = arrive('activity_log_settings_change', { eventOutcome: 'success', errorCode: 'E42', operationType: 'update' });
    expect(withCode.attributes['error.type']).toBe('E42');
    expect(ocsf(withCode).status_id).toBe(2);
  });

  it("a record's own field never takes an OCSF name: it is kept as tableau.raw.<field>", () => {
    const r = arrive('add_delete_user_to_group', { groupOperation: 'add', eventOutcome: 'success', 'ocsf.status_id': 'x', 'ocsf.type_uid': 'y' });
    expect(ocsf(r)).toMatchObject({ activity_id: 3, type_uid: 300603, status_id: 1 });
    expect(r.attributes['tableau.raw.ocsf.status_id']).toBe('x');
    expect(r.attributes['tableau.raw.ocsf.type_uid']).toBe('y');
  });

  it('a type without an OCSF class carries no tableau.ocsf.* attribute', () => {
    expect(catalog.eventTypes.get('background_job')?.ocsf).toBeUndefined();
    expect(ocsf(arrive('background_job', { eventOutcome: 'success' }))).toEqual({});
  });

  it('loading the mappings rejects an activity id that OCSF 1.3.0 does not have and an activityFrom field the type lacks, naming file and line', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'ocsf-mappings-'));
    try {
      cpSync(bundledMappingsDir(), dir, { recursive: true });
      const impersonate = path.join(dir, 'site', 'hist_impersonate_user.yaml');
      // Account Switch (7) is OCSF 1.6.0, not 1.3.0
      writeFileSync(impersonate, readFileSync(impersonate, 'utf8').replace(/activityId: 99/, 'activityId: 7'));
      const group = path.join(dir, 'site', 'add_delete_user_to_group.yaml');
      writeFileSync(group, readFileSync(group, 'utf8').replace('attribute: groupOperation', 'attribute: groupOp'));
      let message = '';
      try {
        loadCatalog(dir, { snapshot: false });
      } catch (err) {
        message = (err as Error).message;
      }
      expect(message).toContain(`${impersonate}:`);
      expect(message).toMatch(/hist_impersonate_user\.yaml:\d+:\d+: ocsf\.activityId: activity_id 7 is not an activity of OCSF 1\.3\.0 class 3002 Authentication/);
      expect(message).toMatch(/add_delete_user_to_group\.yaml:\d+:\d+: ocsf\.activityFrom\.attribute: unknown attribute 'groupOp'/);
      expect(message).toContain(`${group}:`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
