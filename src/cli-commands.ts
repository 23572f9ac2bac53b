/** tableau-activity-otel's commands (run, map, validate), loaded by cli.ts. */
import { Command, Option } from 'commander';
import { createLogger } from './daemon/logger.js';
import { loadConfig, parseConfig, type LoadedConfig } from './daemon/config.js';
import { runCommand, EXIT_CONFIG } from './daemon/run-command.js';
import { mapCommand } from './daemon/map-command.js';
import { validateCommand } from './daemon/validate-command.js';
import { parseDuration } from './util/duration.js';
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
  .action((flags: { config: string }) => {
    try {
      process.stdout.write(validateCommand(loadConfig(flags.config)) + '\n');
    } catch (err) {
      process.stderr.write(`${(err as Error).message}\n`);
      process.exitCode = EXIT_CONFIG;
    }
  });

await program.parseAsync(process.argv);
