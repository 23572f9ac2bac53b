/** `type: file` options (zod, strict). */
import { z } from 'zod';

export const fileDestinationConfigSchema = z
  .object({
    type: z.literal('file'),
    name: z.string().min(1).optional(),
    /** File to append to (relative to the config file's directory); `-` for stdout. */
    path: z.string().min(1),
  })
  .strict();
export type FileDestinationConfig = z.infer<typeof fileDestinationConfigSchema>;
