/**
 * Identity attributes the mapper derives (issue 18): `tableau.impersonated` when a site record's
 * initiating user is not its actor, `user.roles` from tenant `initiatingUserRole` and site
 * `siteRoleId` (its documented role name), and a record's own `eventType` that differs from the
 * type kept as `tableau.event_sub_type`. Every record goes through the three mapping paths (map() +
 * the object encoder, mapDirect(), mapLineDirect() of the line's bytes), each read back with the
 * test receiver's protobuf decoder; all three must agree.
 */
import { describe, it, expect } from 'vitest';
import { loadCatalog } from '../src/mapping/catalog.js';
import { RecordMapper } from '../src/mapping/record-mapper.js';
import { FlatJsonLine } from '../src/decoding/flat-json-line.js';
import { parseObjectKey } from '../src/decoding/object-key.js';
import { encodeLogsRequest } from '../src/export/otlp-protobuf/object-encoder.js';
import { DirectLogsRequestWriter } from '../src/export/otlp-protobuf/direct-writer.js';
import { decodeOtlpLogsBody, type ReceivedLogRecord } from './support/otlp-receiver.js';
import { catalog, mappedThreeWays, OBSERVED, scope } from './support/three-path-mapping.js';
import type { MappedLogRecord } from '../src/mapping/log-record.js';

const mapped = mappedThreeWays;

describe('identity attributes, through the protobuf encodings', () => {
  it('tableau.impersonated: true only when initiatingUserLuid and actorUserLuid are both given and differ', () => {
    const imp = mapped('hist_access_view', 'site', { actorUserLuid: 'viewer-1', initiatingUserLuid: 'admin-9' });
    expect(imp.attributes['tableau.impersonated']).toBe(true);
    expect(imp.attributes['user.id']).toBe('viewer-1');
    expect(imp.attributes['tableau.initiating_user_luid']).toBe('admin-9');
    expect(mapped('hist_access_view', 'site', { actorUserLuid: 'u-1', initiatingUserLuid: 'u-1' }).attributes).not.toHaveProperty(['tableau.impersonated']);
    expect(mapped('hist_access_view', 'site', { actorUserLuid: 'u-1', initiatingUserLuid: '' }).attributes).not.toHaveProperty(['tableau.impersonated']);
    expect(mapped('hist_access_view', 'site', { actorUserLuid: 'u-1' }).attributes).not.toHaveProperty(['tableau.impersonated']);
    expect(mapped('hist_access_view', 'site', { initiatingUserLuid: 'admin-9' }).attributes).not.toHaveProperty(['tableau.impersonated']);
  });

  it('a record\'s eventType that differs from the type is tableau.event_sub_type; an equal one is not repeated', () => {
    const mv = mapped('hist_create_materialized_views', 'site', { actorUserLuid: 'u-1', eventType: 'encryption' });
    expect(mv.attributes['tableau.event_type']).toBe('hist_create_materialized_views');
    expect(mv.attributes['tableau.event_sub_type']).toBe('encryption');
    expect(mv.attributes).not.toHaveProperty(['tableau.raw.eventType']);
    const other = mapped('hist_access_view', 'site', { actorUserLuid: 'u-1', eventType: 'something_else' });
    expect(other.attributes['tableau.event_sub_type']).toBe('something_else');
    const same = mapped('hist_access_view', 'site', { actorUserLuid: 'u-1', eventType: 'hist_access_view' });
    expect(same.attributes).not.toHaveProperty(['tableau.event_sub_type']);
    expect(same.attributes).not.toHaveProperty(['tableau.raw.eventType']);
    // tenant records always carry their type: equal, not repeated
    expect(mapped('jwt_login', 'tenant', { initiatingUserId: 'u-1' }).attributes).not.toHaveProperty(['tableau.event_sub_type']);
  });

  it('user.roles: tenant initiatingUserRole as a one-item array; the original stays', () => {
    const r = mapped('jwt_login', 'tenant', { initiatingUserId: 'u-1', initiatingUserRole: 'TENANT_ADMIN' });
    expect(r.attributes['user.roles']).toEqual(['TENANT_ADMIN']);
    expect(r.attributes['tableau.initiating_user_role']).toBe('TENANT_ADMIN');
    expect(mapped('jwt_login', 'tenant', { initiatingUserId: 'u-1' }).attributes).not.toHaveProperty(['user.roles']);
  });

  it('user.roles: site siteRoleId by its documented name; an undocumented id gives none; the id stays', () => {
    const documented: Array<[number, string]> = [[0, 'SiteAdministratorExplorer'], [1, 'SupportUser'], [2, 'ExplorerCanPublish'], [3, 'Explorer'],
      [7, 'Guest'], [8, 'Unlicensed'], [9, 'Viewer'], [10, 'Creator'], [11, 'SiteAdministratorCreator']];
    for (const [id, role] of documented) {
      const r = mapped('hist_access_view', 'site', { actorUserLuid: 'u-1', siteRoleId: id });
      expect(r.attributes['user.roles']).toEqual([role]);
      expect(Number(r.attributes['tableau.site_role_id'])).toBe(id);
    }
    const unknown = mapped('hist_access_view', 'site', { actorUserLuid: 'u-1', siteRoleId: 5 });
    expect(unknown.attributes).not.toHaveProperty(['user.roles']);
    expect(Number(unknown.attributes['tableau.site_role_id'])).toBe(5);
    expect(mapped('hist_access_view', 'site', { actorUserLuid: 'u-1', siteRoleId: '10' }).attributes).not.toHaveProperty(['user.roles']);
  });
});
