/** The TCM personal access token secret, read at each sign-in (so a rotated token is picked up): from an environment variable or a file. */
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';

export interface TcmPatSetting {
  /** Name of the environment variable holding the PAT secret. */
  patEnv?: string | undefined;
  /** File holding the PAT secret (relative to `baseDir`). */
  patFile?: string | undefined;
}

/** `who` starts the error messages (e.g. `tcm source tcm-main`); they name the variable or file, never the secret. */
export async function readTcmPat(setting: TcmPatSetting, baseDir: string, env: NodeJS.ProcessEnv, who: string): Promise<string> {
  if (setting.patEnv) {
    const v = env[setting.patEnv]?.trim();
    if (!v) throw new Error(`${who}: environment variable ${setting.patEnv} (patEnv) is not set or empty`);
    return v;
  }
  if (!setting.patFile) throw new Error(`${who}: no patEnv or patFile for the TCM personal access token`);
  const file = resolve(baseDir, setting.patFile);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    throw new Error(`${who}: cannot read patFile ${file}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`);
  }
  const v = text.trim();
  if (!v) throw new Error(`${who}: patFile ${file} is empty`);
  return v;
}
