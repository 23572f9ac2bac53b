/** The `tableau-server` source's configuration: its options, their defaults and rules, and its id. */
import { win32 } from 'node:path';
import { z } from 'zod';
import { durationSchema } from '../../core/duration.js';

/** The process folders of the logs directory that hold Activity Log files. */
export const TABLEAU_SERVER_PROCESSES = ['backgrounder', 'dataserver', 'vizportal', 'vizqlserver'] as const;
/** How Tableau Server names the Activity Log files (`<process name>-cepp-canonical-events_*.log`). */
export const TABLEAU_SERVER_FILE_PATTERN = '*-cepp-canonical-events_*.log';
/** The line forms a file can have (see decoding/wrapped-line.ts); `auto` detects it from the file's first line. */
export const LINE_FORMATS = ['auto', 'flat', 'event', 'native'] as const;

export const tableauServerSourceConfigSchema = z
  .object({
    type: z.literal('tableau-server'),
    /** Checkpoint key; defaults to `tableau-server:<logsDir>`. */
    name: z.string().min(1).optional(),
    /** The node's logs directory (`…/data/tabsvc/logs`); default the platform's (defaultLogsDir). */
    logsDir: z.string().min(1).optional(),
    /** Folders of `logsDir` read (a node without one of them is fine: it is looked for at every poll). */
    processes: z
      .array(z.string().regex(/^[^/\\]+$/, 'a folder name (no / or \\)').refine((s) => s !== '.' && s !== '..', 'a folder name'))
      .min(1)
      .default([...TABLEAU_SERVER_PROCESSES]),
    /** File names read, a glob (`*` any characters, `?` one); a rotated copy (`name.1`, `name.1.gz`) counts too. */
    filePattern: z.string().min(1).default(TABLEAU_SERVER_FILE_PATTERN),
    pollInterval: durationSchema.default(2_000),
    /** How each line is laid out; `auto`: per file, from its first line. */
    lineFormat: z.enum(LINE_FORMATS).default('auto'),
    /** Resource `service.name` of the records. */
    serviceName: z.string().min(1).default('tableau-server'),
    /** Resource `host.name`: the node; default the machine's host name. */
    hostName: z.string().min(1).optional(),
    /** As for the directory source: when a last line without a newline of a rotated file is read anyway. */
    finishAfter: durationSchema.default(3_600_000),
    /** How long the checkpoint remembers a file no longer found (a copy of it may still turn up). */
    lookbackHours: z.number().int().positive().default(48),
  })
  .strict();
export type TableauServerSourceConfig = z.infer<typeof tableauServerSourceConfigSchema>;

/** Tableau Server's logs directory on this platform: `%PROGRAMDATA%\Tableau\Tableau Server\data\tabsvc\logs` on Windows, `/var/opt/tableau/tableau_server/data/tabsvc/logs` elsewhere. */
export function defaultLogsDir(platform: NodeJS.Platform = process.platform, env: NodeJS.ProcessEnv = process.env): string {
  if (platform === 'win32') return win32.join(env.PROGRAMDATA ?? env.ProgramData ?? 'C:\\ProgramData', 'Tableau', 'Tableau Server', 'data', 'tabsvc', 'logs');
  return '/var/opt/tableau/tableau_server/data/tabsvc/logs';
}

/** The source's id (its checkpoint key): `name`, else `tableau-server:<logsDir>`. */
export function tableauServerSourceId(config: Pick<TableauServerSourceConfig, 'name' | 'logsDir'>): string {
  return config.name ?? `tableau-server:${config.logsDir ?? defaultLogsDir()}`;
}
