/**
 * Which line form a Tableau Server Activity Log file has (decoding/wrapped-line.ts): decided by
 * the first complete line of its first 64 KiB (decompressed, for a gzip rotation) that is a JSON
 * object of one of the forms. A file whose head has no such line is `flat` (its lines are then
 * mapped, or dead-lettered with their own reason); a growing file without a complete line yet
 * is not decided (undefined: looked at again at the next poll).
 */
import { decompressed } from '../../decoding/object-lines.js';
import { lineFormOf, type LineForm } from '../../decoding/wrapped-line.js';
import { fileChunks } from '../directory/file-chunks.js';

/** Bytes of a file's head looked at. */
export const DETECTION_BYTES = 64 * 1024;

export async function detectLineForm(path: string, growing: boolean, signal?: AbortSignal): Promise<LineForm | undefined> {
  const parts: Buffer[] = [];
  let have = 0;
  for await (const chunk of decompressed(fileChunks(path, { expectedSize: DETECTION_BYTES, maxReadBytes: DETECTION_BYTES, probeBytes: DETECTION_BYTES, signal }))) {
    parts.push(chunk);
    have += chunk.length;
    if (have >= DETECTION_BYTES) break;
  }
  const head = Buffer.concat(parts).subarray(0, DETECTION_BYTES);
  const text = head.toString('utf8');
  const lines = text.split('\n');
  // the last piece is a complete line only when the file is finished (and all of it was read)
  const complete = growing || head.length >= DETECTION_BYTES ? lines.slice(0, -1) : lines;
  for (const line of complete) {
    const t = line.trim();
    if (t === '') continue;
    let value: unknown;
    try {
      value = JSON.parse(t);
    } catch {
      continue;
    }
    const form = lineFormOf(value);
    if (form) return form;
  }
  if (complete.some((l) => l.trim() !== '') || head.length >= DETECTION_BYTES || !growing) return 'flat';
  return undefined;
}
