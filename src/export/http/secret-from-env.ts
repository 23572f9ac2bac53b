/** A destination's secret read from the environment variable its `…Env` option names. */
import { DestinationConfigError } from '../destination-type.js';

/** The value of the environment variable a `…Env` option names; a clear error (naming the variable, never a value) when unset. */
export function secretFromEnv(env: NodeJS.ProcessEnv, variable: string, what: string): string {
  const value = env[variable];
  if (value === undefined || value === '') throw new DestinationConfigError(`${what}: environment variable ${variable} is not set`);
  return value;
}
