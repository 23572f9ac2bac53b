/**
 * The daemon's own logs: structured JSON lines on stderr (stdout may carry exported records),
 * via pino. Secrets never reach a log line: config values are not logged, and errors from
 * destinations are reduced to status and reason.
 */
import { pino, type Logger } from 'pino';

export type { Logger };

export function createLogger(level: string = process.env.LOG_LEVEL ?? 'info'): Logger {
  return pino(
    {
      level,
      base: { service: 'tableau-activity-otel' },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      redact: { paths: ['token', 'pat', 'apiKey', 'headers', '*.token', '*.pat', '*.apiKey', '*.headers'], censor: '[redacted]' },
    },
    pino.destination({ fd: 2, sync: true }),
  );
}

export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
