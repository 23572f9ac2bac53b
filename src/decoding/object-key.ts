/**
 * What an object's key (S3 key, file path relative to the source root) says about its
 * records: Tableau's layout is
 * `pod=<pod>/siteLuid=<site>/y=YYYY/m=MM/d=DD/h=HH/eventType=<type>/<file>`, possibly under
 * a prefix, and any of these segments may be absent.
 */
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
  if (y && m && d && h && /^\d{4}$/.test(y) && /^\d{1,2}$/.test(m) && /^\d{1,2}$/.test(d) && /^\d{1,2}$/.test(h)) {
    info.partitionHour = `${y}-${m.padStart(2, '0')}-${d.padStart(2, '0')}T${h.padStart(2, '0')}`;
  }
  return info;
}
