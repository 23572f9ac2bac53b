/**
 * The daemon's own logs, via pino, on stderr (stdout may carry exported records): one JSON line
 * per event (`time`, `level`, `msg`, and `tenant`, `source`, `object` where they apply), or,
 * when stderr is a terminal, one human-readable line (`time LEVEL msg key=value …`).
 * `LOG_FORMAT=json|pretty` chooses explicitly; `LOG_LEVEL` sets the level.
 *
 * Secrets never reach a log line: config values are not logged, errors from destinations are
 * reduced to status and reason, a redact list covers the usual field names, and every line is
 * scrubbed of the secret values the configuration names (see secrets.ts) before it is written.
 */
import { pino, type Logger } from 'pino';
import { scrubSecrets } from './secrets.js';
import { stderrStatusArea, type StatusArea } from './terminal.js';

export type { Logger };
export type LogFormat = 'json' | 'pretty';

export function resolveLogFormat(env: NodeJS.ProcessEnv = process.env, isTTY: boolean = process.stderr.isTTY === true): LogFormat {
  const f = env.LOG_FORMAT?.trim().toLowerCase();
  if (f === 'json' || f === 'pretty') return f;
  return isTTY ? 'pretty' : 'json';
}

export interface LoggerOptions {
  format?: LogFormat;
  /** Where lines go (default: stderr, below-the-progress-bars aware). */
  out?: { print(text: string): void };
  /** Colours in the pretty format (default: when writing to a terminal). */
  colors?: boolean;
}

export function createLogger(level: string = process.env.LOG_LEVEL ?? 'info', options: LoggerOptions = {}): Logger {
  const format = options.format ?? resolveLogFormat();
  const out: { print(text: string): void } = options.out ?? stderrStatusArea();
  const colors = options.colors ?? (options.out === undefined && process.stderr.isTTY === true && !process.env.NO_COLOR);
  const stream = {
    write(line: string): void {
      const clean = scrubSecrets(line);
      out.print(format === 'pretty' ? formatPretty(clean, colors) : clean);
    },
  };
  return pino(
    {
      level,
      base: { service: 'tableau-activity-otel' },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      redact: {
        paths: ['token', 'pat', 'apiKey', 'headers', 'password', 'secret', '*.token', '*.pat', '*.apiKey', '*.headers', '*.password', '*.secret'],
        censor: '[redacted]',
      },
    },
    stream,
  );
}

export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}

const LEVEL_COLOR: Record<string, string> = { trace: '90', debug: '36', info: '32', warn: '33', error: '31', fatal: '35' };
const FIRST_KEYS = ['tenant', 'source', 'destination', 'object'];
const HIDDEN_KEYS = new Set(['level', 'time', 'msg', 'service', 'pid', 'hostname']);

/** One pino JSON line → `HH:MM:SS.mmm LEVEL msg key=value …` (a line that is not JSON is passed through). */
export function formatPretty(line: string, colors = false): string {
  let o: Record<string, unknown>;
  try {
    o = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return line.endsWith('\n') ? line : line + '\n';
  }
  const time = typeof o.time === 'string' ? o.time.slice(11, 23) : '';
  const level = String(o.level ?? 'info');
  const label = level.toUpperCase().padEnd(5);
  const paint = (code: string | undefined, s: string): string => (colors && code ? `\x1b[${code}m${s}\x1b[0m` : s);
  const keys = [...FIRST_KEYS.filter((k) => k in o), ...Object.keys(o).filter((k) => !HIDDEN_KEYS.has(k) && !FIRST_KEYS.includes(k))];
  const fields = keys.map((k) => `${paint('90', k + '=')}${prettyValue(o[k])}`);
  return [paint('90', time), paint(LEVEL_COLOR[level], label), String(o.msg ?? ''), ...fields].filter((s) => s !== '').join(' ') + '\n';
}

function prettyValue(v: unknown): string {
  if (typeof v === 'string') return v === '' || /[\s"=]/.test(v) ? JSON.stringify(v) : v;
  if (v !== null && typeof v === 'object') {
    const err = v as { message?: unknown; type?: unknown };
    if (typeof err.message === 'string' && typeof err.type === 'string') return JSON.stringify(`${err.type}: ${err.message}`);
    return JSON.stringify(v);
  }
  return String(v);
}

/**
 * Process warnings (Node's and libraries', e.g. the AWS SDK's NodeVersionSupportWarning under
 * Node 20) go through the logger instead of Node's plain-text stderr output, which would break
 * the JSON lines. The AWS SDK's Node-version notice is logged once, at debug.
 */
export function routeProcessWarnings(log: Logger): () => void {
  const seen = new Set<string>();
  const onWarning = (w: Error & { code?: string }): void => {
    const nodeVersionNotice = w.name === 'NodeVersionSupportWarning' || w.message.startsWith('NodeVersionSupportWarning');
    const key = nodeVersionNotice ? 'NodeVersionSupportWarning' : `${w.name}:${w.code ?? ''}:${w.message}`;
    if (seen.has(key)) return;
    seen.add(key);
    const fields = { warning: nodeVersionNotice ? 'NodeVersionSupportWarning' : w.name, ...(w.code ? { code: w.code } : {}) };
    const message = w.message.replace(/\s*\n\s*/g, ' ').trim();
    if (nodeVersionNotice) log.debug(fields, message);
    else log.warn(fields, message);
  };
  process.removeAllListeners('warning');
  process.on('warning', onWarning);
  return () => process.off('warning', onWarning);
}

export type { StatusArea };
