/**
 * The daemon's own logs, via pino, on stderr (stdout may carry exported records): one JSON line
 * per event (`time`, `level`, `msg`, and `tenant`, `source`, `object` where they apply), or,
 * when stderr is a terminal, one human-readable line (`time LEVEL msg key=value …`).
 * `LOG_FORMAT=json|pretty` chooses explicitly; `LOG_LEVEL` sets the level.
 *
 * Data never controls the terminal: the pretty format escapes every control character of
 * messages, keys and values, and JSON lines escape the ones JSON leaves raw (C1, bidi overrides).
 *
 * Secrets never reach a log line: config values are not logged, errors from destinations are
 * reduced to status and reason, a redact list covers the usual field names, and every line is
 * scrubbed of the secret values the configuration names (see secrets.ts) before it is written.
 */
import { pino, type Logger } from 'pino';
import { scrubSecrets } from '../core/redaction.js';
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
      out.print(format === 'pretty' ? formatPretty(clean, colors) : escapeJsonControls(clean));
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

export { silentLogger } from '../core/logger.js';

const LEVEL_COLOR: Record<string, string> = { trace: '90', debug: '36', info: '32', warn: '33', error: '31', fatal: '35' };
const FIRST_KEYS = ['tenant', 'source', 'destination', 'object'];
const HIDDEN_KEYS = new Set(['level', 'time', 'msg', 'service', 'pid', 'hostname']);

/**
 * One pino JSON line → `HH:MM:SS.mmm LEVEL msg key=value …` (a line that is not JSON is passed
 * through). Text from outside (object keys, error texts a server sent, values from the data)
 * can hold terminal control sequences: every control character of the message, the keys and
 * the values is written as a visible escape (`\u001b`), so a log line never moves the cursor,
 * recolours or retitles the terminal.
 */
export function formatPretty(line: string, colors = false): string {
  let o: Record<string, unknown>;
  try {
    o = JSON.parse(line) as Record<string, unknown>;
  } catch {
    const text = line.endsWith('\n') ? line.slice(0, -1) : line;
    return escapeControls(text) + '\n';
  }
  const time = typeof o.time === 'string' ? escapeControls(o.time.slice(11, 23)) : '';
  const level = String(o.level ?? 'info');
  const label = escapeControls(level.toUpperCase().padEnd(5));
  const paint = (code: string | undefined, s: string): string => (colors && code ? `\x1b[${code}m${s}\x1b[0m` : s);
  const keys = [...FIRST_KEYS.filter((k) => k in o), ...Object.keys(o).filter((k) => !HIDDEN_KEYS.has(k) && !FIRST_KEYS.includes(k))];
  const fields = keys.map((k) => `${paint('90', escapeControls(k) + '=')}${prettyValue(o[k])}`);
  return [paint('90', time), paint(LEVEL_COLOR[level], label), escapeControls(String(o.msg ?? '')), ...fields].filter((s) => s !== '').join(' ') + '\n';
}

/**
 * C0 and C1 control characters, DEL, and the Unicode line separators and bidirectional
 * overrides (which reorder what a terminal shows).
 */
const CONTROL_CHARS = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/**
 * A JSON line with the control characters JSON leaves raw (DEL, C1 such as the 8-bit CSI, line
 * separators, bidirectional overrides) as `\uXXXX` escapes: still the same JSON, and safe to
 * print on a terminal. (They occur only inside strings: the structure is ASCII.)
 */
const JSON_RAW_CONTROLS = /[\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
export function escapeJsonControls(line: string): string {
  return line.replace(JSON_RAW_CONTROLS, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** The text with each control character as `\uXXXX` (newline `\n`, tab `\t`, CR `\r`). */
export function escapeControls(text: string): string {
  return text.replace(CONTROL_CHARS, (c) => (c === '\n' ? '\\n' : c === '\t' ? '\\t' : c === '\r' ? '\\r' : `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`));
}

function prettyValue(v: unknown): string {
  if (typeof v === 'string') return v === '' || /[\s"=]/.test(v) ? escapeControls(JSON.stringify(v)) : escapeControls(v);
  if (v !== null && typeof v === 'object') {
    const err = v as { message?: unknown; type?: unknown };
    if (typeof err.message === 'string' && typeof err.type === 'string') return escapeControls(JSON.stringify(`${err.type}: ${err.message}`));
    return escapeControls(JSON.stringify(v));
  }
  return escapeControls(String(v));
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
