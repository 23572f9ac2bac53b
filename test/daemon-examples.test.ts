/**
 * The operator-facing files stay true: `validate` passes on every configuration in examples/
 * (including the ones inside the Kubernetes manifests), the Grafana dashboard only queries
 * metrics the daemon has, every metric is documented in docs/operations.md, and the Dockerfile,
 * docker-compose file and Kubernetes manifests have what the README promises.
 */
import { describe, it, expect } from 'vitest';
import { readFileSync, readdirSync, statSync, writeFileSync, existsSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { parseAllDocuments, parse } from 'yaml';
import { runCli, REPO_ROOT } from './support/cli-process.js';
import { tempDir } from './support/activity-fixtures.js';
import { DaemonMetrics } from '../src/daemon/metrics.js';
import { parseLogLines } from './support/daemon-process.js';

const EXAMPLES = join(REPO_ROOT, 'examples');

function yamlFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = join(dir, name);
    if (statSync(full).isDirectory()) return name === 'activity-log' ? [] : yamlFiles(full);
    return /\.ya?ml$/.test(name) ? [full] : [];
  });
}

/** Every `${VAR}` a text uses, set to a placeholder long enough for any key. */
function placeholderEnv(text: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const m of text.matchAll(/\$\{([A-Za-z_][A-Za-z0-9_]*)/g)) env[m[1]!] = 'placeholder-value-0123456789abcdef';
  return env;
}

interface ConfigToValidate {
  name: string;
  file: string;
  env: Record<string, string>;
}

/** The daemon configurations under examples/: plain files, and those inside Kubernetes ConfigMaps. */
function exampleConfigs(): { configs: ConfigToValidate[]; unclassified: string[] } {
  const configs: ConfigToValidate[] = [];
  const unclassified: string[] = [];
  for (const file of yamlFiles(EXAMPLES)) {
    const rel = relative(EXAMPLES, file);
    const text = readFileSync(file, 'utf8');
    const docs = parseAllDocuments(text).map((d) => d.toJS() as Record<string, unknown> | null).filter((d): d is Record<string, unknown> => d !== null);
    if (docs.length === 1 && 'tenants' in docs[0]!) {
      // (the overrides files it names may use variables too)
      configs.push({ name: rel, file, env: Object.assign({}, ...yamlFiles(EXAMPLES).map((f) => placeholderEnv(readFileSync(f, 'utf8')))) });
    } else if (docs.some((d) => typeof d.apiVersion === 'string' && typeof d.kind === 'string')) {
      // Kubernetes: each ConfigMap that holds a daemon config, written out with its other entries (overrides files)
      for (const d of docs.filter((x) => x.kind === 'ConfigMap')) {
        const data = (d.data ?? {}) as Record<string, string>;
        const dir = tempDir('tao-k8s-');
        for (const [k, v] of Object.entries(data)) writeFileSync(join(dir, k), v);
        for (const [k, v] of Object.entries(data)) {
          const parsed = parse(v) as Record<string, unknown> | null;
          if (parsed && typeof parsed === 'object' && 'tenants' in parsed) configs.push({ name: `${rel}#${String((d.metadata as { name: string }).name)}/${k}`, file: join(dir, k), env: Object.assign({}, ...Object.values(data).map(placeholderEnv)) });
        }
      }
    } else if (docs.length === 1 && ('services' in docs[0]! || 'receivers' in docs[0]!)) {
      // docker-compose and collector configurations: checked below
    } else if (rel.startsWith('tenants/')) {
      // overrides files: validated through the configurations that name them (checked below)
    } else unclassified.push(rel);
  }
  return { configs, unclassified };
}

/* eslint-disable @typescript-eslint/no-explicit-any -- Kubernetes manifests are walked as plain data */
describe('examples', () => {
  it('validate passes on every configuration in examples/', async () => {
    const { configs, unclassified } = exampleConfigs();
    expect(unclassified, 'example files this test does not know how to check').toEqual([]);
    const names = configs.map((c) => c.name);
    for (const expected of [
      'quickstart.yaml',
      'otlp-collector.yaml',
      's3-to-splunk-hec.yaml',
      'tcm-to-datadog.yaml',
      'two-tenants.yaml',
      'compose/config.yaml',
      'kubernetes/sidecar.yaml#tableau-activity-otel/config.yaml',
    ]) {
      expect(names).toContain(expected);
    }
    const results = await Promise.all(configs.map(async (c) => ({ c, res: await runCli(['validate', '--config', c.file], { env: c.env }) })));
    for (const { c, res } of results) expect(res.code, `${c.name}: ${res.stderr}`).toBe(0);
    // the overrides files are all used by some configuration
    const two = results.find((r) => r.c.name === 'two-tenants.yaml')!;
    expect(two.res.stdout).toMatch(/2 overrides file\(s\)/);
    const sidecar = results.find((r) => r.c.name.startsWith('kubernetes/sidecar.yaml'))!;
    expect(sidecar.res.stdout).toMatch(/1 overrides file\(s\)/);
    for (const f of readdirSync(join(EXAMPLES, 'tenants'))) expect(readFileSync(join(EXAMPLES, 'two-tenants.yaml'), 'utf8')).toContain(`./tenants/${f}`);
  });

  it('docker-compose: the daemon and a collector, every mounted file present, the collector config complete', () => {
    const compose = parse(readFileSync(join(EXAMPLES, 'docker-compose.yaml'), 'utf8')) as { services: Record<string, { image?: string; build?: { context: string; dockerfile: string }; volumes?: string[]; command?: string[] }> };
    const daemon = compose.services['tableau-activity-otel']!;
    const collector = compose.services['otel-collector']!;
    expect(collector.image).toMatch(/^otel\/opentelemetry-collector-contrib:\d+\.\d+\.\d+$/);
    expect(existsSync(join(EXAMPLES, daemon.build!.context, daemon.build!.dockerfile))).toBe(true);
    for (const v of [...(daemon.volumes ?? []), ...(collector.volumes ?? [])]) {
      const [src] = v.split(':');
      if (src!.startsWith('.')) expect(existsSync(resolve(EXAMPLES, src!)), v).toBe(true);
    }
    const cfg = parse(readFileSync(join(EXAMPLES, 'compose', 'config.yaml'), 'utf8')) as { tenants: Array<{ destinations: Array<{ endpoint: string }> }> };
    expect(cfg.tenants[0]!.destinations[0]!.endpoint).toBe('http://otel-collector:4318');
    const col = parse(readFileSync(join(EXAMPLES, 'compose', 'otel-collector.yaml'), 'utf8')) as { service: { pipelines: { logs: { receivers: string[]; exporters: string[] } } }; receivers: Record<string, unknown>; exporters: Record<string, unknown> };
    for (const r of col.service.pipelines.logs.receivers) expect(col.receivers).toHaveProperty(r);
    for (const e of col.service.pipelines.logs.exporters) expect(col.exporters).toHaveProperty(e);
  });

  it('kubernetes sidecar: collector and daemon in one pod, Secret for tokens, a volume for state, probes, non-root', () => {
    const docs = parseAllDocuments(readFileSync(join(EXAMPLES, 'kubernetes', 'sidecar.yaml'), 'utf8')).map((d) => d.toJS() as Record<string, any>);
    const kinds = docs.map((d) => d.kind);
    for (const k of ['Secret', 'ConfigMap', 'PersistentVolumeClaim', 'Deployment']) expect(kinds).toContain(k);
    const deploy = docs.find((d) => d.kind === 'Deployment')!;
    expect(deploy.spec.replicas).toBe(1);
    expect(deploy.spec.strategy.type).toBe('Recreate');
    const pod = deploy.spec.template.spec;
    expect(pod.securityContext.runAsNonRoot).toBe(true);
    const daemon = pod.containers.find((c: any) => c.name === 'tableau-activity-otel');
    const collector = [...(pod.initContainers ?? []), ...pod.containers].find((c: any) => String(c.image).startsWith('otel/opentelemetry-collector'));
    expect(collector).toBeDefined();
    expect(daemon.livenessProbe.httpGet.path).toBe('/healthz');
    expect(daemon.readinessProbe.httpGet.path).toBe('/readyz');
    const secretName = docs.find((d) => d.kind === 'Secret')!.metadata.name;
    expect(daemon.env.some((e: any) => e.valueFrom?.secretKeyRef?.name === secretName)).toBe(true);
    const stateMount = daemon.volumeMounts.find((m: any) => m.mountPath === '/state');
    const stateVolume = pod.volumes.find((v: any) => v.name === stateMount.name);
    expect(stateVolume.persistentVolumeClaim.claimName).toBe(docs.find((d) => d.kind === 'PersistentVolumeClaim')!.metadata.name);
    const grace = /--grace", "(\d+)s"/.exec(JSON.stringify(daemon.args).replace(/","/g, '", "'));
    expect(pod.terminationGracePeriodSeconds).toBeGreaterThan(Number(grace?.[1] ?? 30));
    const config = parse(docs.find((d) => d.kind === 'ConfigMap')!.data['config.yaml']) as { state: { dir: string }; server: { address: string } };
    expect(config.state.dir).toBe('/state');
    expect(config.server.address).toBe('0.0.0.0:9464');
  });

  it('the Grafana dashboard queries only metrics the daemon has, and covers throughput, lag, errors, retries, dead letters, latency, checkpoint age', async () => {
    const dash = JSON.parse(readFileSync(join(EXAMPLES, 'grafana-dashboard.json'), 'utf8')) as { panels: Array<{ type: string; title: string; targets?: Array<{ expr: string }> }> };
    const m = new DaemonMetrics();
    m.enableDefaultMetrics();
    const known = new Set((await m.registry.getMetricsAsJSON()).map((x) => x.name));
    const exprs = dash.panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr));
    expect(exprs.length).toBeGreaterThan(10);
    const used = new Set<string>();
    for (const e of exprs) for (const name of e.match(/\b(tao|process|nodejs)_[a-z0-9_]+/g) ?? []) used.add(name.replace(/_(bucket|count|sum)$/, ''));
    for (const name of used) expect(known.has(name), `${name} is not a metric of the daemon`).toBe(true);
    for (const needed of ['tao_events_read_total', 'tao_events_exported_total', 'tao_lag_seconds', 'tao_export_retries_total', 'tao_events_dead_lettered_total', 'tao_batches_dead_lettered_total', 'tao_export_duration_seconds', 'tao_checkpoint_age_seconds', 'tao_source_up', 'tao_destination_up']) {
      expect(used, needed).toContain(needed);
    }
  });

  it('docs/operations.md documents every metric, the endpoints and the signals; the README the image', async () => {
    const readme = readFileSync(join(REPO_ROOT, 'README.md'), 'utf8');
    const ops = readFileSync(join(REPO_ROOT, 'docs', 'operations.md'), 'utf8');
    const m = new DaemonMetrics();
    for (const metric of await m.registry.getMetricsAsJSON()) expect(ops, `docs/operations.md lacks ${metric.name}`).toContain(`\`${metric.name}\``);
    for (const s of ['/healthz', '/readyz', '/metrics', 'SIGTERM', 'SIGINT', 'SIGHUP', 'TAO_LISTEN', '--listen', 'LOG_FORMAT']) expect(ops).toContain(s);
    expect(readme).toContain('docker build -t tableau-activity-otel .');
    expect(readme).toMatch(/docker run (?:.*\\\n)*.*tableau-activity-otel/); // (continued lines)
  });

  it('Dockerfile: multi-stage, runtime dependencies only, non-root, HEALTHCHECK on /healthz, volumes, the Node major CI tests', () => {
    const text = readFileSync(join(REPO_ROOT, 'Dockerfile'), 'utf8');
    const lines = text.split('\n').filter((l) => !l.trim().startsWith('#'));
    const froms = lines.filter((l) => /^FROM /.test(l));
    expect(froms.length).toBeGreaterThanOrEqual(2);
    const version = /^ARG NODE_VERSION=(\d+)\.(\d+)\.(\d+)$/m.exec(text);
    expect(version, 'ARG NODE_VERSION=x.y.z').not.toBeNull();
    // the image runs the LTS line CI tests on besides the machine's Node (.ci/run: `node@24`)
    const ciLts = /\bnode@(\d+)\b/.exec(readFileSync(join(REPO_ROOT, '.ci', 'run'), 'utf8'));
    expect(ciLts, '.ci/run installs node@<major>').not.toBeNull();
    expect(Number(version![1])).toBe(Number(ciLts![1]));
    const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { engines: { node: string } };
    expect(Number(version![1])).toBeGreaterThanOrEqual(Number(/\d+/.exec(pkg.engines.node)![0]));
    for (const f of froms) expect(f).toContain('node:${NODE_VERSION}');
    const last = lines.slice(lines.lastIndexOf(froms.at(-1)!)).join('\n');
    expect(last).toMatch(/^USER node$/m);
    expect(last).toMatch(/^HEALTHCHECK [^]*?\/healthz/m);
    expect(last).toMatch(/^VOLUME \["\/config", "\/state"\]$/m);
    expect(last).not.toMatch(/npm ci(?!.*--omit=dev)/); // the final image gets no dev dependencies
    expect(text).toMatch(/npm ci --omit=dev/);
    expect(last).toMatch(/COPY --from=build \/app\/dist/);
    expect(last).toMatch(/COPY mappings/);
    const ignore = readFileSync(join(REPO_ROOT, '.dockerignore'), 'utf8');
    for (const needed of ['!src/', '!mappings/', '!package.json', '!package-lock.json', '!tsconfig.json']) expect(ignore).toContain(needed);
  });

  it("the quick start's run over the bundled example tree logs no warning (site records' own eventType is documented)", async () => {
    // examples/quickstart.yaml with its state and output in a temporary folder, read once
    const work = tempDir();
    const quickstart = parse(readFileSync(join(EXAMPLES, 'quickstart.yaml'), 'utf8')) as { tenants: Array<{ sources: Array<{ path: string }>; destinations: Array<{ path: string }> }> };
    quickstart.tenants[0]!.sources[0]!.path = join(EXAMPLES, 'activity-log');
    quickstart.tenants[0]!.destinations[0]!.path = join(work, 'exported.otlp.jsonl');
    writeFileSync(join(work, 'config.yaml'), JSON.stringify({ ...quickstart, state: { dir: join(work, 'state') } }));
    const res = await runCli(['run', '--once', '--config', join(work, 'config.yaml')]);
    expect(res.code, res.stderr).toBe(0);
    const logs = parseLogLines(res.stderr);
    expect(logs.length).toBeGreaterThan(0);
    expect(logs.filter((l) => l.level !== 'info' && l.level !== 'debug')).toEqual([]);
    const exported = readFileSync(join(work, 'exported.otlp.jsonl'), 'utf8');
    type Request = { resourceLogs: Array<{ scopeLogs: Array<{ logRecords: unknown[] }> }> };
    const records = exported.split('\n').filter((l) => l !== '').flatMap((l) => (JSON.parse(l) as Request).resourceLogs.flatMap((r) => r.scopeLogs.flatMap((sl) => sl.logRecords)));
    expect(records).toHaveLength(410); // examples/activity-log/README.md: 410 records
    // the records' eventType equals the object key's: the event type only, no tableau.raw.eventType
    expect(exported).toContain('"tableau.event_type"');
    expect(exported).not.toContain('tableau.raw.eventType');
  });
});
