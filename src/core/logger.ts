/**
 * The logger every layer writes to: pino's `Logger` interface. The daemon builds the real one
 * (daemon/logger.ts: format, level, secret scrubbing); components and the pipeline only log
 * through this interface, and use `silentLogger()` where nobody listens (tests, one-off tools).
 */
import { pino, type Logger } from 'pino';

export type { Logger };

export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
