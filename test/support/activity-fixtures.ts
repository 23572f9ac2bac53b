/**
 * Synthetic activity-log trees in Tableau's layout for tests. Every record carries a unique
 * `testSeq` (an attribute no page documents, so it also exercises the unknown-attribute path:
 * it arrives as `tableau.test_seq`).
 */
import { mkdirSync, writeFileSync, mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { gzipSync } from 'node:zlib';

export interface FixtureRecord {
  key: string;
  line: number;
  record: Record<string, unknown>;
}

export interface FixtureTree {
  root: string;
  records: FixtureRecord[];
  files: string[];
}

export function tempDir(prefix = 'tao-test-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

const SITE = 'b3a1c7e0-1111-4a2b-9c3d-000000000001';

/** `files` objects × `perFile` records, alternating event types; every third object gzip. */
export function writeFixtureTree(root: string, files: number, perFile: number, startSeq = 0, namePrefix = 'part'): FixtureTree {
  const types = ['hist_access_view', 'login_authentication', 'add_delete_user_to_group', 'vizql_http_request'];
  const records: FixtureRecord[] = [];
  const keys: string[] = [];
  let seq = startSeq;
  for (let f = 0; f < files; f++) {
    const type = types[f % types.length]!;
    const hour = String(f % 24).padStart(2, '0');
    const key = `pod=prod-a/siteLuid=${SITE}/y=2026/m=11/d=29/h=${hour}/eventType=${type}/${namePrefix}-${String(f).padStart(4, '0')}.txt`;
    const lines: string[] = [];
    for (let i = 0; i < perFile; i++) {
      const record: Record<string, unknown> = {
        eventTime: `2026-11-29T${hour}:${String(i % 60).padStart(2, '0')}:07.${String(123456789 + seq).slice(-9)}Z`,
        actorUserLuid: `user-${seq % 17}`,
        initiatingUserLuid: `user-${seq % 17}`,
        siteLuid: SITE,
        actorUserId: seq % 17,
        siteRoleId: 3,
        eventOutcome: type === 'login_authentication' ? null : seq % 50 === 0 ? 'unauthorized' : 'success',
        testSeq: seq,
      };
      if (type === 'vizql_http_request') {
        record.requestUri = `/vizql/w/Sales/v/Overview/bootstrapSession?seq=${seq}`;
        record.method = 'POST';
        record.ipAddress = `10.0.0.${seq % 250}`;
      }
      if (type === 'login_authentication') record.status = seq % 40 === 0 ? 'failure' : 'success';
      records.push({ key, line: i + 1, record });
      lines.push(JSON.stringify(record));
      seq++;
    }
    const text = lines.join('\n') + '\n';
    const full = join(root, ...key.split('/'));
    mkdirSync(join(full, '..'), { recursive: true });
    writeFileSync(full, f % 3 === 2 ? gzipSync(text) : text);
    keys.push(key);
  }
  return { root, records, files: keys };
}
