/** What the bench and the soak need around a running daemon: a free port for it, its resident set, what it has exported. */
import fs from 'node:fs';
import net, { type AddressInfo } from 'node:net';

/** A port free on 127.0.0.1 now (for the daemon's HTTP endpoints). */
export async function freePort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const { port } = srv.address() as AddressInfo;
  await new Promise<void>((resolve) => srv.close(() => resolve()));
  return port;
}

/** The process's resident set (VmRSS), in kB; 0 once it is gone. */
export function readVmRssKb(pid: number): number {
  try {
    return Number(/^VmRSS:\s+(\d+) kB/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
  } catch {
    return 0;
  }
}

/** The records the daemon on `port` has exported (`tao_events_exported_total`, summed); -1 while it does not serve yet. */
/** The main thread's V8 heap in use and the memory outside it that V8 accounts for (Buffers, shared buffers), in bytes, from the daemon's /metrics; -1 when unknown. */
export async function mainHeapBytes(port: number): Promise<{ used: number; external: number }> {
  try {
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    const one = (name: string): number => Number(new RegExp(`^${name} (\\d+(?:\\.\\d+)?)`, 'm').exec(text)?.[1] ?? -1);
    return { used: one('nodejs_heap_size_used_bytes'), external: one('nodejs_external_memory_bytes') };
  } catch {
    return { used: -1, external: -1 };
  }
}

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
