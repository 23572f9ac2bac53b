/**
 * Faults, load and bad input: `npm run faults` (builds first, then runs this file).
 *
 *   npm run faults -- [--short] [--only NAME[,NAME…]] [--json FILE] [--keep]
 *
 * Drives the real CLI (`dist/cli.js`) as a child process against local test servers (an OTLP/HTTP
 * receiver, s3rver, a TCM API server, TCP proxies that cut or refuse connections), all on
 * 127.0.0.1, and prints one row per scenario: events in, events delivered (unique records by
 * their `testSeq`), duplicates, dead-lettered lines, the child's peak RSS and the outcome.
 * Exit code 1 when any scenario fails. `--short` runs reduced versions (CI).
 */
import { parseArgs } from 'node:util';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { FaultContext, REPO_ROOT, tempRoot, type Features, type Scenario, type ScenarioResult } from './lib/harness.js';
import { SCENARIOS } from './scenarios/index.js';

export interface Row extends ScenarioResult {
  name: string;
  title: string;
  seconds: number;
}

/** A module of the build (imported by URL: the harness looks at what dist/ has, whatever src/ says). */
function distModule(rel: string): string {
  return pathToFileURL(join(REPO_ROOT, 'dist', rel)).href;
}

export async function detectFeatures(): Promise<Features> {
  const features: Features = { server: false, destinationTypes: ['otlp', 'file'] };
  try {
    const config = (await import(distModule('daemon/config.js'))) as { configSchema?: { shape?: Record<string, unknown> } };
    features.server = !!config.configSchema?.shape && 'server' in config.configSchema.shape;
  } catch {
    /* not built */
  }
  try {
    const reg = (await import(distModule('export/destination-registry.js'))) as { destinationConfigSchema?: { options?: Array<{ shape?: { type?: { value?: string } } }> } };
    const types = (reg.destinationConfigSchema?.options ?? []).map((o) => o.shape?.type?.value).filter((t): t is string => typeof t === 'string');
    if (types.length > 0) features.destinationTypes = types;
  } catch {
    /* keep the defaults */
  }
  return features;
}

export async function runScenarios(options: { short: boolean; only?: string[]; keep?: boolean; log?: (m: string) => void }): Promise<Row[]> {
  const log = options.log ?? ((m: string) => process.stderr.write(`${m}\n`));
  const features = await detectFeatures();
  const chosen: Scenario[] = options.only && options.only.length > 0 ? SCENARIOS.filter((s) => options.only!.includes(s.name)) : SCENARIOS;
  if (options.only) for (const n of options.only) if (!SCENARIOS.some((s) => s.name === n)) throw new Error(`no scenario ${n} (have: ${SCENARIOS.map((s) => s.name).join(', ')})`);
  const root = tempRoot();
  const rows: Row[] = [];
  for (const s of chosen) {
    const ctx = new FaultContext(s.name, root, features, (m) => log(`[${s.name}] ${m}`));
    const started = Date.now();
    log(`[${s.name}] ${s.title}${options.short ? ' (short)' : ''}`);
    let r: ScenarioResult;
    try {
      r = await s.run(ctx, { short: options.short });
    } catch (err) {
      r = { eventsIn: 0, delivered: 0, duplicates: 0, deadLettered: 0, peakRssMb: ctx.peakRssMb, outcome: 'FAIL', notes: `FAIL: scenario crashed: ${(err as Error).stack ?? String(err)}` };
    } finally {
      await ctx.cleanup(options.keep === true);
    }
    const row: Row = { name: s.name, title: s.title, seconds: Math.round((Date.now() - started) / 100) / 10, ...r };
    rows.push(row);
    log(`[${s.name}] ${row.outcome} in ${row.seconds}s: in ${row.eventsIn}, delivered ${row.delivered}, duplicates ${row.duplicates}, dead-lettered ${row.deadLettered}, peak RSS ${row.peakRssMb} MB${row.notes ? ` — ${row.notes}` : ''}`);
  }
  if (options.keep) log(`work directories kept in ${root}`);
  else rmSync(root, { recursive: true, force: true });
  return rows;
}

export function formatTable(rows: Row[]): string {
  const header = ['scenario', 'events in', 'delivered', 'duplicates', 'dead-lettered', 'peak RSS (MB)', 'seconds', 'outcome'];
  const body = rows.map((r) => [r.name, String(r.eventsIn), String(r.delivered), String(r.duplicates), String(r.deadLettered), String(r.peakRssMb), String(r.seconds), r.outcome]);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((b) => b[i]!.length)));
  const line = (cells: string[]): string => `| ${cells.map((c, i) => (i === 0 || i === cells.length - 1 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join(' | ')} |`;
  const sep = `| ${widths.map((w, i) => (i === 0 || i === widths.length - 1 ? '-'.repeat(w) : `${'-'.repeat(w - 1)}:`)).join(' | ')} |`;
  const notes = rows.filter((r) => r.notes).map((r) => `- ${r.name}: ${r.notes}`);
  return [line(header), sep, ...body.map(line), '', ...notes].join('\n');
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      short: { type: 'boolean', default: false },
      only: { type: 'string' },
      json: { type: 'string' },
      keep: { type: 'boolean', default: false },
    },
  });
  const only = values.only ? values.only.split(',').map((s) => s.trim()).filter(Boolean) : undefined;
  const started = Date.now();
  const rows = await runScenarios({ short: values.short === true, ...(only ? { only } : {}), keep: values.keep === true });
  process.stdout.write(`\n${formatTable(rows)}\n\n${rows.length} scenarios in ${Math.round((Date.now() - started) / 1000)} s (${values.short ? 'short' : 'full'} run)\n`);
  if (values.json) writeFileSync(values.json, JSON.stringify(rows, null, 2));
  const failed = rows.filter((r) => r.outcome === 'FAIL');
  process.exitCode = failed.length > 0 ? 1 : 0;
  // test servers (s3rver) may keep handles: exit explicitly
  setTimeout(() => process.exit(process.exitCode ?? 0), 200).unref();
}

if (process.argv[1] && /run-faults\.[tj]s$/.test(process.argv[1])) {
  await main();
}
