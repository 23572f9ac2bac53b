/** Durations in config files: a number of seconds, or `500ms`, `10s`, `5m`, `2h`, `1d`. Parsed to milliseconds. */
import { z } from 'zod';

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

export function parseDuration(value: string | number): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) && value >= 0 ? Math.round(value * 1000) : undefined;
  const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$/.exec(value);
  if (!m) return undefined;
  return Math.round(Number(m[1]) * UNIT_MS[m[2] ?? 's']!);
}

export const durationSchema = z.union([z.number(), z.string()]).transform((v, ctx) => {
  const ms = parseDuration(v);
  if (ms === undefined) {
    ctx.addIssue({ code: 'custom', message: `not a duration: ${JSON.stringify(v)} (use e.g. 30s, 5m, 2h)` });
    return z.NEVER;
  }
  return ms;
});
