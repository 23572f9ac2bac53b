/**
 * Walking Tableau's hourly partitions in S3 without listing the whole bucket:
 *
 *   <prefix>pod=<pod>/siteLuid=<site>/y=YYYY/m=MM/d=DD/h=HH/eventType=<type>/<file>
 *
 * 1. Discovery: `Delimiter: '/'` listings from the prefix down through `name=value/` folders
 *    (pod=, siteLuid=, …) find every "partition root": a prefix whose children are `y=YYYY/`.
 *    Several sites (and pods) under one prefix are found by themselves.
 * 2. For each root, from a start hour up to an upper hour: the year folders (from discovery),
 *    one `Delimiter` listing per year for its months, one per month for its days (empty days
 *    and months cost nothing), then one recursive listing per day (all its hours and event
 *    types in pages of 1000 keys), starting after `h=<start hour>` on the first day.
 *
 * So a poll that is caught up costs about 3 list calls per site plus the discovery, whatever
 * the number of objects ever read; a year of backlog costs about 400 calls per site.
 * Partition values are compared as numbers (zero padding is not relied upon).
 */
import type { ListedObject, S3Lister } from './s3-client.js';

/** A configured `prefix` as used: '' or ending in '/' (the folder above `pod=…/`). */
export function normalizedPrefix(prefix: string): string {
  return prefix === '' || prefix.endsWith('/') ? prefix : `${prefix}/`;
}

/** An hour partition as `YYYY-MM-DDTHH` (what `parseObjectKey` calls `partitionHour`); sorts as text. */
export type Hour = string;

export function hourFromMs(ms: number): Hour {
  return new Date(ms).toISOString().slice(0, 13);
}

export function hourToMs(hour: Hour): number {
  return Date.parse(`${hour}:00:00Z`);
}

export function addHours(hour: Hour, n: number): Hour {
  return hourFromMs(hourToMs(hour) + n * 3_600_000);
}

function pad2(n: number): string {
  return String(n).padStart(2, '0');
}

/**
 * `since`/`until` values: `YYYY-MM-DD`, `YYYY-MM-DDTHH`, a full ISO 8601 time (UTC when it has
 * no offset), or, relative to now, a duration such as `36h` or `14d`. Returns epoch ms.
 */
export function parseTimeBound(value: string, nowMs: number): number | undefined {
  const v = value.trim();
  let m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(v);
  if (m) return validUtc(`${v}T00:00:00Z`);
  m = /^(\d{4})-(\d{2})-(\d{2})T(\d{2})$/.exec(v);
  if (m) return validUtc(`${v}:00:00Z`);
  if (/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?$/i.test(v)) {
    return validUtc(/(Z|[+-]\d{2}:?\d{2})$/i.test(v) ? v : `${v}Z`);
  }
  const d = /^(\d+(?:\.\d+)?)\s*(h|d)$/.exec(v);
  if (d) return nowMs - Number(d[1]) * (d[2] === 'h' ? 3_600_000 : 86_400_000);
  return undefined;
}

function validUtc(iso: string): number | undefined {
  const t = Date.parse(iso);
  if (!Number.isFinite(t)) return undefined;
  // reject impossible calendar dates that Date.parse rolls over (2026-02-30)
  const datePart = iso.slice(0, 10);
  if (/^\d{4}-\d{2}-\d{2}$/.test(datePart) && !/[+-]\d{2}:?\d{2}$/.test(iso) && new Date(t).toISOString().slice(0, 10) !== datePart) return undefined;
  return t;
}

/** A tiny concurrency limiter for list calls. */
export function limiter(n: number): <T>(fn: () => Promise<T>) => Promise<T> {
  let active = 0;
  const queue: Array<() => void> = [];
  const next = (): void => {
    if (active >= n) return;
    const run = queue.shift();
    if (run) {
      active++;
      run();
    }
  };
  return <T>(fn: () => Promise<T>) =>
    new Promise<T>((resolve, reject) => {
      queue.push(() => {
        fn().then(resolve, reject).finally(() => {
          active--;
          next();
        });
      });
      next();
    });
}

// ---------------------------------------------------------------------------
// Discovery
// ---------------------------------------------------------------------------

export interface PartitionFolder {
  value: number;
  prefix: string;
}

export interface PartitionRoot {
  /** Full S3 prefix ending in '/', e.g. `logs/pod=prod-a/siteLuid=abc/`. */
  prefix: string;
  /** The part after the source prefix: names the root in the checkpoint position. */
  rel: string;
  /** Its `y=YYYY/` folders, oldest first. */
  years: PartitionFolder[];
}

const PARTITION_SEGMENTS = new Set(['y', 'm', 'd', 'h', 'eventType']);

function lastSegment(prefix: string): string {
  const trimmed = prefix.endsWith('/') ? prefix.slice(0, -1) : prefix;
  return trimmed.slice(trimmed.lastIndexOf('/') + 1);
}

/** Children of the form `<name>=<number>/`, as numbers, oldest first. */
export function numericChildren(children: string[], name: string): PartitionFolder[] {
  const out: PartitionFolder[] = [];
  const re = new RegExp(`^${name}=(\\d{1,4})$`);
  for (const c of children) {
    const m = re.exec(lastSegment(c));
    if (m) out.push({ value: Number(m[1]), prefix: c });
  }
  return out.sort((a, b) => a.value - b.value || (a.prefix < b.prefix ? -1 : 1));
}

/**
 * Finds the partition roots under `prefix`: descends through `name=value/` folders (not
 * partition folders) up to `maxDepth` levels; a folder with `y=YYYY/` children is a root.
 */
export async function discoverRoots(lister: S3Lister, prefix: string, signal: AbortSignal, limit: <T>(fn: () => Promise<T>) => Promise<T>, maxDepth = 3): Promise<PartitionRoot[]> {
  const roots: PartitionRoot[] = [];
  let level = [prefix];
  for (let depth = 0; level.length > 0; depth++) {
    const listed = await Promise.all(level.map((p) => limit(() => lister.prefixes(p, signal)).then((children) => ({ p, children }))));
    const nextLevel: string[] = [];
    for (const { p, children } of listed) {
      const years = numericChildren(children, 'y');
      if (years.length > 0) {
        roots.push({ prefix: p, rel: p.slice(prefix.length), years });
        continue;
      }
      if (depth >= maxDepth) continue;
      for (const c of children) {
        const seg = lastSegment(c);
        const eq = seg.indexOf('=');
        if (eq <= 0 || PARTITION_SEGMENTS.has(seg.slice(0, eq))) continue;
        nextLevel.push(c);
      }
    }
    level = nextLevel;
  }
  return roots.sort((a, b) => (a.prefix < b.prefix ? -1 : a.prefix > b.prefix ? 1 : 0));
}

// ---------------------------------------------------------------------------
// Walking one root
// ---------------------------------------------------------------------------

export interface PartitionObject extends ListedObject {
  hour: Hour;
}

/**
 * The objects of `root` in hour partitions `start` (inclusive; undefined = from the oldest)
 * to `upper` (inclusive), in no particular order.
 */
export async function listRootObjects(
  lister: S3Lister,
  root: PartitionRoot,
  start: Hour | undefined,
  upper: Hour,
  signal: AbortSignal,
  limit: <T>(fn: () => Promise<T>) => Promise<T>,
): Promise<PartitionObject[]> {
  if (start && start > upper) return [];
  const startDay = start?.slice(0, 10);
  const startMonth = start?.slice(0, 7);
  const upperDay = upper.slice(0, 10);
  const upperMonth = upper.slice(0, 7);
  const startYear = start ? Number(start.slice(0, 4)) : -Infinity;
  const upperYear = Number(upper.slice(0, 4));

  const years = root.years.filter((y) => y.value >= startYear && y.value <= upperYear);
  const months = (
    await Promise.all(
      years.map((y) =>
        limit(() => lister.prefixes(y.prefix, signal)).then((children) =>
          numericChildren(children, 'm')
            .filter((m) => m.value >= 1 && m.value <= 12)
            .map((m) => ({ ...m, ym: `${String(y.value).padStart(4, '0')}-${pad2(m.value)}` })),
        ),
      ),
    )
  )
    .flat()
    .filter((m) => (!startMonth || m.ym >= startMonth) && m.ym <= upperMonth);

  const days = (
    await Promise.all(
      months.map((m) =>
        limit(() => lister.prefixes(m.prefix, signal)).then((children) =>
          numericChildren(children, 'd')
            .filter((d) => d.value >= 1 && d.value <= 31)
            .map((d) => ({ ...d, ymd: `${m.ym}-${pad2(d.value)}` })),
        ),
      ),
    )
  )
    .flat()
    .filter((d) => (!startDay || d.ymd >= startDay) && d.ymd <= upperDay);

  const perDay = await Promise.all(
    days.map((d) => {
      // On the first day skip the hours before the start: keys under `h=<start>/` sort after
      // `h=<start>` (and unpadded `h=5/` after `h=05`); hour 0 has nothing before it.
      const startHour = start && d.ymd === startDay ? Number(start.slice(11, 13)) : 0;
      const startAfter = startHour > 0 ? `${d.prefix}h=${pad2(startHour)}` : undefined;
      return limit(() => lister.objects(d.prefix, startAfter, signal)).then((objects) => {
        const out: PartitionObject[] = [];
        for (const o of objects) {
          const rest = o.key.slice(d.prefix.length);
          const m = /^h=(\d{1,2})\//.exec(rest);
          if (!m || Number(m[1]) > 23) continue; // not in an hour partition
          const hour = `${d.ymd}T${pad2(Number(m[1]))}`;
          if ((start && hour < start) || hour > upper) continue;
          out.push({ ...o, hour });
        }
        return out;
      });
    }),
  );
  return perDay.flat();
}
