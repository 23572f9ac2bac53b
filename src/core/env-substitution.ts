/**
 * `${VAR}` in configuration strings is replaced by the environment variable's value after YAML
 * parsing (so a secret with YAML-special characters cannot change the document's structure).
 * `${VAR:-default}` gives a default; `$${` is a literal `${`. An unset variable without a
 * default is an error naming the path.
 *
 * What was substituted is kept on the parsed document (`parsed.substitutions`), so that a
 * validation error quotes a value as it is written in the file (`${TCM_PAT}`), never the
 * variable's value (the PAT).
 */
import { FileError, formatPath, positionOf, type ParsedYaml, type Substitution } from './yaml-file.js';
export interface SubstitutionProblem {
  path: PropertyKey[];
  message: string;
}

const PATTERN = /\$\$\{|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;

export function substituteEnv(value: unknown, env: NodeJS.ProcessEnv, problems: SubstitutionProblem[], path: PropertyKey[] = [], substitutions?: Substitution[]): unknown {
  if (typeof value === 'string') {
    const inserted: Array<{ name: string; value: string }> = [];
    const out = value.replace(PATTERN, (match, name: string | undefined, fallback: string | undefined) => {
      if (match === '$${') return '${';
      const v = env[name!];
      if (v !== undefined && v !== '') {
        inserted.push({ name: name!, value: v });
        return v;
      }
      if (fallback !== undefined) return fallback;
      problems.push({ path, message: `environment variable ${name} is not set` });
      return '';
    });
    if (inserted.length > 0) substitutions?.push({ path, written: value, value: out, inserted });
    return out;
  }
  if (Array.isArray(value)) return value.map((v, i) => substituteEnv(v, env, problems, [...path, i], substitutions));
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = substituteEnv(v, env, problems, [...path, k], substitutions);
    return out;
  }
  return value;
}

/** The parsed document's value with `${VAR}` substituted; unset variables are a FileError naming file, line and path. */
export function substituteEnvInYaml(parsed: ParsedYaml, env: NodeJS.ProcessEnv, value: unknown = parsed.value): unknown {
  const problems: SubstitutionProblem[] = [];
  const substitutions: Substitution[] = [];
  const out = substituteEnv(value, env, problems, [], substitutions);
  parsed.substitutions = [...(parsed.substitutions ?? []), ...substitutions];
  if (problems.length > 0) throw new FileError(parsed.file, problems.map((p) => `${positionOf(parsed, p.path)}: ${formatPath(p.path)}: ${p.message}`));
  return out;
}
