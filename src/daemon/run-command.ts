/**
 * `run`: the daemon (poll forever) or `run --once` (read what is there, export, wait for the
 * acknowledgements, save checkpoints, exit).
 *
 * - SIGTERM/SIGINT: stop reading, let in-flight batches finish within the grace period, save
 *   checkpoints, exit 0 (at the latest when the grace period ends). A second signal exits at
 *   once (128 + the signal's number).
 * - SIGHUP: read the configuration file again and apply it (see Daemon.reload); an invalid file
 *   keeps the running configuration.
 * - The HTTP endpoints (/healthz, /readyz, /metrics) in daemon mode, or with `--listen`.
 * - `--once`: a progress display (bars on a terminal, periodic lines otherwise).
 * - At start, one warning per weak setting (security-warnings.ts: insecureSkipVerify, credentials
 *   over plain http to another host).
 */
import { loadSourceTypes } from '../sources/source-registry.js';
import { loadDestinationTypes } from '../export/destination-registry.js';
import type { LoadedConfig } from './config.js';
import type { Logger } from './logger.js';
import { routeProcessWarnings } from './logger.js';
import { DaemonMetrics } from './metrics.js';
import { Daemon, pipelineSettings as daemonPipelineSettings } from './daemon.js';
import { DEFAULT_LISTEN_ADDRESS, ListenError, parseListenAddress, startHttpServer, type RunningHttpServer } from './http-server.js';
import { ProgressReporter } from './progress.js';
import { stderrStatusArea } from './terminal.js';
import { scrubSecrets } from '../core/redaction.js';
import { securityWarnings } from './security-warnings.js';

export interface RunOptions {
  once: boolean;
  metrics?: DaemonMetrics;
  /** Milliseconds in-flight batches get after a stop signal. */
  graceMs: number;
  /** `--listen`: serve the endpoints on this address (also with --once). */
  listen?: string;
  /** `run --once` progress lines when stderr is not a terminal, every this many ms (0: none). */
  progressIntervalMs?: number;
  /** Read the configuration again (SIGHUP); absent when there is no file to read. */
  reload?: () => LoadedConfig;
  /** Applied to every configuration loaded (command-line overrides). */
  adjust?: (loaded: LoadedConfig) => void;
  env?: NodeJS.ProcessEnv;
}

export const EXIT_OK = 0;
export const EXIT_DESTINATION_UNAVAILABLE = 1;
export const EXIT_CONFIG = 2;
export const pipelineSettings = daemonPipelineSettings;

const SIGNAL_NUMBERS: Partial<Record<NodeJS.Signals, number>> = { SIGINT: 2, SIGTERM: 15 };

/** Where the endpoints listen: `--listen`, else (daemon mode) `server.address`, `TAO_LISTEN`, 127.0.0.1:9464. */
export function listenAddress(loaded: LoadedConfig, options: Pick<RunOptions, 'once' | 'listen' | 'env'>): string | undefined {
  if (options.listen) return options.listen;
  const server = loaded.config.server;
  if (options.once || !server.enabled) return undefined;
  return server.address ?? (options.env ?? process.env).TAO_LISTEN ?? DEFAULT_LISTEN_ADDRESS;
}

export async function runCommand(loaded: LoadedConfig, options: RunOptions, log: Logger): Promise<number> {
  const env = options.env ?? process.env;
  const metrics = options.metrics ?? new DaemonMetrics();
  const address = listenAddress(loaded, options);
  const listen = address === undefined ? undefined : parseListenAddress(address);
  if (address !== undefined && !listen) {
    process.stderr.write(`not a listen address: ${address} (use host:port, e.g. 127.0.0.1:9464)\n`);
    return EXIT_CONFIG;
  }
  const unrouteWarnings = routeProcessWarnings(log);
  const daemon = new Daemon({
    once: options.once,
    graceMs: options.graceMs,
    log,
    metrics,
    probeDestinations: listen !== undefined,
    env,
    ...(options.adjust ? { adjust: options.adjust } : {}),
  });

  let started = false;
  let stopRequested!: () => void;
  const stopSignal = new Promise<void>((r) => (stopRequested = r));
  let signals = 0;
  const onSignal = (sig: NodeJS.Signals): void => {
    signals++;
    if (signals > 1) {
      log.warn({ signal: sig }, 'second signal: exiting now');
      process.exit(128 + (SIGNAL_NUMBERS[sig] ?? 1));
    }
    log.info({ signal: sig, graceMs: options.graceMs }, 'stopping: no new reads, finishing in-flight batches');
    setTimeout(() => {
      log.error({ graceMs: options.graceMs }, 'could not stop within the grace period: exiting now (unacknowledged batches are sent again at the next start)');
      process.exit(1);
    }, options.graceMs).unref();
    void daemon.stop();
    stopRequested();
  };
  const onHangup = (): void => {
    if (options.once) {
      log.info({}, 'SIGHUP ignored: run --once does not reload its configuration');
      return;
    }
    if (!started) {
      log.warn({}, 'SIGHUP ignored: still starting');
      return;
    }
    if (!options.reload) {
      log.warn({}, 'SIGHUP ignored: there is no configuration file to read again (started without --config)');
      return;
    }
    log.info({ file: daemon.configFile }, 'SIGHUP: reloading the configuration');
    void daemon.reload(options.reload);
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  process.on('SIGHUP', onHangup);
  const removeHandlers = (): void => {
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
    process.off('SIGHUP', onHangup);
    unrouteWarnings();
  };

  try {
    daemon.lockState(loaded); // another process on the same tenant state: say so before anything starts
  } catch (err) {
    process.stderr.write(scrubSecrets(`${(err as Error).message}\n`));
    removeHandlers();
    return EXIT_CONFIG;
  }

  let server: RunningHttpServer | undefined;
  if (listen) {
    metrics.enableDefaultMetrics();
    try {
      server = await startHttpServer(
        listen,
        {
          readiness: () => daemon.readiness(),
          readyDetail: loaded.config.server.readyDetail ?? 'loopback',
          readyDetailFrom: loaded.config.server.readyDetailFrom,
          metrics: async () => {
            daemon.refreshGauges();
            return { contentType: metrics.registry.contentType, text: await metrics.registry.metrics() };
          },
        },
        log,
      );
    } catch (err) {
      if (!(err instanceof ListenError)) throw err;
      log.error({ err: err.message }, 'cannot start the HTTP endpoints');
      removeHandlers();
      return EXIT_CONFIG;
    }
    log.info({ address: server.address }, 'serving /healthz, /readyz and /metrics');
  }

  try {
    await loadSourceTypes(loaded.config.tenants.flatMap((t) => t.sources));
    await loadDestinationTypes(loaded.config.tenants.flatMap((t) => t.destinations));
    daemon.start(loaded);
  } catch (err) {
    // configuration problems found while starting (mapping files, overrides, sources, destinations): clear message, no stack
    process.stderr.write(scrubSecrets(`${(err as Error).message}\n`));
    await server?.close();
    removeHandlers();
    return EXIT_CONFIG;
  }

  started = true;
  for (const w of securityWarnings(loaded.config, env)) log.warn(w.fields, w.msg);
  let progress: ProgressReporter | undefined;
  if (options.once) {
    const tty = process.stderr.isTTY === true;
    progress = new ProgressReporter(() => daemon.sourceProgress(), {
      tty,
      intervalMs: options.progressIntervalMs ?? 10_000,
      log,
      area: stderrStatusArea(),
      colors: tty && !env.NO_COLOR,
    });
    if (tty || (options.progressIntervalMs ?? 10_000) > 0) progress.start();
  }

  const startedAt = Date.now();
  let exit = EXIT_OK;
  if (options.once) exit = await daemon.finished();
  else await stopSignal;
  await daemon.stop();
  progress?.stop();

  for (const { tenant, stats: s } of daemon.summaries()) {
    log.info(
      {
        tenant,
        objects: s.objectsRead,
        lines: s.linesRead,
        exported: s.recordsExported,
        deadLetteredLines: s.deadLetteredLines,
        deadLetteredBatches: s.deadLetteredBatches,
        droppedByOverride: s.droppedByOverride,
        retries: s.retries,
        seconds: (Date.now() - startedAt) / 1000,
      },
      options.once ? 'run --once finished' : 'stopped',
    );
  }
  await server?.close();
  removeHandlers();
  return exit;
}
