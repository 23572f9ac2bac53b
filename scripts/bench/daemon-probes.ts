/** What the bench and the soak read of a running daemon: its resident set and what it has exported. */
import fs from 'node:fs';

/** The process's resident set (VmRSS), in kB; 0 once it is gone. */
export function readVmRssKb(pid: number): number {
  try {
    return Number(/^VmRSS:\s+(\d+) kB/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
  } catch {
    return 0;
  }
}

/** The records the daemon on `port` has exported (`tao_events_exported_total`, summed); -1 while it does not serve yet. */
export async function exportedSoFar(port: number): Promise<number> {
  try {
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    let sum = 0;
    for (const m of text.matchAll(/^tao_events_exported_total\{[^}]*\} (\d+)/gm)) sum += Number(m[1]);
    return sum;
  } catch {
    return -1;
  }
}
