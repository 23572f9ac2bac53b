/** tableau-activity-otel's commands (run, map, validate, replay), loaded by cli.ts. */
import { Command, Option } from 'commander';
import { createLogger } from './daemon/logger.js';
import { loadConfig, parseConfig, type LoadedConfig } from './daemon/config.js';
import { runCommand, EXIT_CONFIG } from './daemon/run-command.js';
import { mapCommand } from './daemon/map-command.js';
import { validateCommand } from './daemon/validate-command.js';
import { replayCommand, ReplayUsageError, EXIT_REPLAY_USAGE } from './daemon/replay-command.js';
import { scrubSecrets } from './core/redaction.js';
import { parseDuration } from './core/duration.js';
import { parseListenAddress } from './daemon/http-server.js';
import { stringify } from 'yaml';

const program = new Command();
program.name('tableau-activity-otel').description('Forward Tableau Activity Log events as OpenTelemetry log records');

interface RunFlags {
  config?: string;
  once?: boolean;
  source?: string;
  otlpEndpoint?: string;
  otlpProtocol?: 'http/protobuf' | 'http/json';
  output?: string;
  stateDir: string;
  tenant: string;
  grace: string;
  retryFor?: string;
  listen?: string;
  progressInterval: string;
}

/** `--source DIR` with `--otlp-endpoint`/`--output`: a one-tenant config built from flags. */
function configFromFlags(flags: RunFlags): LoadedConfig {
  const destinations: Array<Record<string, unknown>> = [];
  if (flags.output) destinations.push({ type: 'file', path: flags.output });
  if (flags.otlpEndpoint || !flags.output) {
    destinations.push({ type: 'otlp', ...(flags.otlpEndpoint ? { endpoint: flags.otlpEndpoint } : {}), ...(flags.otlpProtocol ? { protocol: flags.otlpProtocol } : {}) });
  }
  const doc = {
    state: { dir: flags.stateDir },
    ...(flags.retryFor ? { pipeline: { retryFor: flags.retryFor } } : {}),
    tenants: [{ id: flags.tenant, sources: [{ type: 'directory', path: flags.source }], destinations }],
  };
  return parseConfig('<command line>', stringify(doc));
}

program
  .command('run')
  .description('run the daemon (or read once with --once)')
  .option('-c, --config <file>', 'configuration file (YAML)')
  .option('--once', 'read everything available now, export it, save checkpoints and exit')
  .option('--source <dir>', 'without --config: a directory of activity-log files')
  .option('--otlp-endpoint <url>', 'without --config: OTLP/HTTP endpoint (default: OTEL_EXPORTER_OTLP_* variables)')
  .addOption(new Option('--otlp-protocol <protocol>', 'without --config: OTLP protocol').choices(['http/protobuf', 'http/json']))
  .option('--output <file>', 'without --config: also write OTLP JSON lines to this file (- for stdout)')
  .option('--state-dir <dir>', 'without --config: state directory', './.state')
  .option('--tenant <id>', 'without --config: tenant id', 'default')
  .option('--grace <duration>', 'time in-flight batches get after SIGTERM/SIGINT', '30s')
  .option('--retry-for <duration>', 'how long a batch is retried before the destination counts as unreachable')
  .option('--listen <address>', 'serve /healthz, /readyz and /metrics on host:port (default: server.address, else TAO_LISTEN, else 127.0.0.1:9464; with --once: only when given)')
  .option('--progress-interval <duration>', 'with --once when stderr is not a terminal: a progress line per source this often (0: none)', '10s')
  .action(async (flags: RunFlags) => {
    const log = createLogger();
    let loaded: LoadedConfig;
    let adjust: ((l: LoadedConfig) => void) | undefined;
    try {
      if (flags.retryFor) {
        const ms = parseDuration(flags.retryFor);
        if (ms === undefined) throw new Error(`--retry-for: not a duration: ${flags.retryFor}`);
        adjust = (l) => {
          l.config.pipeline.retryFor = ms;
        };
      }
      if (flags.config) loaded = loadConfig(flags.config);
      else if (flags.source) loaded = configFromFlags(flags);
      else throw new Error('give --config FILE, or --source DIR with --otlp-endpoint URL or --output FILE');
      if (flags.listen !== undefined && !parseListenAddress(flags.listen)) throw new Error(`--listen: not an address: ${flags.listen} (use host:port, e.g. 0.0.0.0:9464)`);
    } catch (err) {
      process.stderr.write(`${(err as Error).message}\n`);
      process.exitCode = EXIT_CONFIG;
      return;
    }
    const graceMs = parseDuration(flags.grace);
    if (graceMs === undefined) {
      process.stderr.write(`--grace: not a duration: ${flags.grace}\n`);
      process.exitCode = EXIT_CONFIG;
      return;
    }
    const progressIntervalMs = parseDuration(flags.progressInterval);
    if (progressIntervalMs === undefined) {
      process.stderr.write(`--progress-interval: not a duration: ${flags.progressInterval}\n`);
      process.exitCode = EXIT_CONFIG;
      return;
    }
    const file = flags.config;
    try {
      process.exitCode = await runCommand(
        loaded,
        {
          once: !!flags.once,
          graceMs,
          progressIntervalMs,
          ...(flags.listen !== undefined ? { listen: flags.listen } : {}),
          ...(adjust ? { adjust } : {}),
          ...(file ? { reload: () => loadConfig(file) } : {}),
        },
        log,
      );
      // requests abandoned at the end of the grace period (a destination that does not answer)
      // must not keep the process alive; every log line and record was written synchronously
      process.exit(process.exitCode);
    } catch (err) {
      // configuration problems found while starting (mapping files, overrides): clear message, no stack
      if (err instanceof Error && (err.name === 'FileError' || err.name === 'CatalogError' || err.name === 'DestinationConfigError')) {
        process.stderr.write(`${err.message}\n`);
        process.exitCode = EXIT_CONFIG;
        return;
      }
      throw err;
    }
  });

program
  .command('map')
  .description('print the mapped records of activity-log files as OTLP JSON (no export, no state)')
  .argument('<files...>', 'NDJSON files, plain or gzip')
  .option('--tenant <id>', 'tenant id put on the resource', 'default')
  .option('--mappings <dir>', 'mapping files to use instead of the bundled ones')
  .action(async (files: string[], flags: { tenant: string; mappings?: string }) => {
    process.exitCode = await mapCommand(files, { tenant: flags.tenant, ...(flags.mappings ? { mappingsDir: flags.mappings } : {}) });
  });

program
  .command('validate')
  .description('check a configuration file and every mapping file it uses')
  .requiredOption('-c, --config <file>', 'configuration file (YAML)')
  .action(async (flags: { config: string }) => {
    try {
      process.stdout.write((await validateCommand(loadConfig(flags.config))) + '\n');
    } catch (err) {
      process.stderr.write(`${(err as Error).message}\n`);
      process.exitCode = EXIT_CONFIG;
    }
  });

program
  .command('replay')
  .description("send a tenant's dead letters again (same log.record.uid); what was sent is recorded, so nothing is sent twice")
  .requiredOption('-c, --config <file>', 'configuration file (YAML)')
  .option('--tenant <id>', 'only this tenant (default: every tenant of the config)')
  .option('--reason <text>', 'only letters whose reason contains this (case-insensitive), or matches /regex/flags')
  .option('--since <time>', 'only letters written at or after this time (ISO 8601, or a duration ago: 2h, 1d)')
  .option('--until <time>', 'only letters written before this time')
  .option('--destination <name>', "send to this destination only (line letters, and batch letters it rejected or whose destination is gone)")
  .option('--dry-run', 'map the letters and print what would be sent, per kind, reason and destination; send nothing')
  .option('--retry-for <duration>', 'how long one request is retried before its destination counts as unreachable (default: pipeline.retryFor, else 5m)')
  .action(async (flags: { config: string; tenant?: string; reason?: string; since?: string; until?: string; destination?: string; dryRun?: boolean; retryFor?: string }) => {
    const log = createLogger();
    const abort = new AbortController();
    const onSignal = (): void => abort.abort();
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
    try {
      const retryForMs = flags.retryFor === undefined ? undefined : parseDuration(flags.retryFor);
      if (flags.retryFor !== undefined && retryForMs === undefined) throw new ReplayUsageError(`--retry-for: not a duration: ${flags.retryFor}`);
      const loaded = loadConfig(flags.config);
      // a destination writing to stdout gets stdout to itself: the report goes to stderr then
      const toStdout = loaded.config.tenants.some((t) => t.destinations.some((d) => d.type === 'file' && d.path === '-'));
      const out = (text: string): void => void (toStdout ? process.stderr : process.stdout).write(text);
      process.exitCode = await replayCommand(
        loaded,
        {
          dryRun: !!flags.dryRun,
          signal: abort.signal,
          ...(flags.tenant !== undefined ? { tenant: flags.tenant } : {}),
          ...(flags.reason !== undefined ? { reason: flags.reason } : {}),
          ...(flags.since !== undefined ? { since: flags.since } : {}),
          ...(flags.until !== undefined ? { until: flags.until } : {}),
          ...(flags.destination !== undefined ? { destination: flags.destination } : {}),
          ...(retryForMs !== undefined ? { retryForMs } : {}),
        },
        out,
        log,
      );
    } catch (err) {
      if (err instanceof Error && (err instanceof ReplayUsageError || err.name === 'FileError' || err.name === 'CatalogError' || err.name === 'DestinationConfigError')) {
        process.stderr.write(scrubSecrets(`${err.message}\n`));
        process.exitCode = EXIT_REPLAY_USAGE;
        return;
      }
      throw err;
    } finally {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    }
  });

await program.parseAsync(process.argv);
