/**
 * What an object's key (S3 key, file path relative to the source root) says about its
 * records: Tableau's layout is
 * `pod=<pod>/siteLuid=<site>/y=YYYY/m=MM/d=DD/h=HH/eventType=<type>/<file>`, possibly under
 * a prefix, and any of these segments may be absent.
 */
import type { LineForm } from './wrapped-line.js';

export interface ObjectKeyInfo {
  eventType?: string;
  siteLuid?: string;
  pod?: string;
  tenantId?: string;
  /** `YYYY-MM-DDTHH` when the key has the y/m/d/h partition segments. */
  partitionHour?: string;
  /**
   * Resource attributes the source attaches to the object's records (e.g. `host.name`, or
   * `service.name` instead of the family's default); set through `SourceObject.info`.
   */
  resource?: Readonly<Record<string, string>>;
  /** How the object's lines are laid out (set by a source that knows, see wrapped-line.ts); absent: flat. */
  lineForm?: LineForm;
}

export function parseObjectKey(key: string): ObjectKeyInfo {
  const info: ObjectKeyInfo = {};
  let y: string | undefined, m: string | undefined, d: string | undefined, h: string | undefined;
  for (const segment of key.split('/')) {
    const eq = segment.indexOf('=');
    if (eq <= 0) continue;
    const name = segment.slice(0, eq);
    const value = segment.slice(eq + 1);
    if (value === '') continue;
    switch (name) {
      case 'eventType': info.eventType = value; break;
      case 'siteLuid': info.siteLuid = value; break;
      case 'pod': info.pod = value; break;
      case 'tenant': case 'tenantId': info.tenantId = value; break;
      case 'y': y = value; break;
      case 'm': m = value; break;
      case 'd': d = value; break;
      case 'h': h = value; break;
    }
  }
  const hours = hoursOf(y, m, d, h);
  if (hours?.length === 13) info.partitionHour = hours;
  return info;
}

/**
 * `info` with every field of ObjectKeyInfo, in one order (absent ones undefined), whatever the key
 * and the source gave: what the mapper reads of a record's key stays one shape of object. Keys
 * with different segments otherwise make objects of different shapes (V8's hidden classes), and
 * the first of a new shape met after the mapper was optimized threw its code away.
 */
export function keyInfoInOneShape(info: ObjectKeyInfo): ObjectKeyInfo {
  return { eventType: info.eventType, siteLuid: info.siteLuid, pod: info.pod, tenantId: info.tenantId, partitionHour: info.partitionHour, resource: info.resource, lineForm: info.lineForm };
}

/**
 * The hours a key's partition segments pin down, as the start of `YYYY-MM-DDTHH`, taken in the
 * order y, m, d, h as far as they go (`…/y=2026/m=3/` → `2026-03`); undefined without a `y=`.
 * For a folder's key, every file under it is in those hours.
 */
export function partitionPrefix(key: string): string | undefined {
  let y: string | undefined, m: string | undefined, d: string | undefined, h: string | undefined;
  for (const segment of key.split('/')) {
    if (segment.length < 2 || segment[1] !== '=') continue;
    const value = segment.slice(2);
    if (segment[0] === 'y') y = value;
    else if (segment[0] === 'm') m = value;
    else if (segment[0] === 'd') d = value;
    else if (segment[0] === 'h') h = value;
  }
  return hoursOf(y, m, d, h);
}

function hoursOf(y: string | undefined, m: string | undefined, d: string | undefined, h: string | undefined): string | undefined {
  if (!y || !/^\d{4}$/.test(y)) return undefined;
  if (!m || !/^\d{1,2}$/.test(m)) return y;
  const month = `${y}-${m.padStart(2, '0')}`;
  if (!d || !/^\d{1,2}$/.test(d)) return month;
  const day = `${month}-${d.padStart(2, '0')}`;
  if (!h || !/^\d{1,2}$/.test(h)) return day;
  return `${day}T${h.padStart(2, '0')}`;
}
