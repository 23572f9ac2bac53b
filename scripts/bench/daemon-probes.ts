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

/**
 * CPU-seconds the process has used so far (user + system of all its threads, `/proc/<pid>/stat`
 * in clock ticks of 1/100 s, what Linux gives user space); with `withChildren`, those of the
 * children it waited for too (its tree). Undefined once it is gone.
 */
export function readCpuSeconds(pid: number, withChildren = false): number | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // fields[0] is field 3, the state
    const own = Number(fields[11]) + Number(fields[12]);
    return (withChildren ? own + Number(fields[13]) + Number(fields[14]) : own) / 100;
  } catch {
    return undefined;
  }
}

/** The daemon's /metrics text on `port`; undefined while it does not serve yet. */
export async function metricsText(port: number): Promise<string | undefined> {
  try {
    return await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  } catch {
    return undefined;
  }
}

/** The records exported in a /metrics text (`tao_events_exported_total`, summed); -1 without one. */
export function exportedIn(text: string | undefined): number {
  if (text === undefined) return -1;
  let sum = 0;
  for (const m of text.matchAll(/^tao_events_exported_total\{[^}]*\} (\d+)/gm)) sum += Number(m[1]);
  return sum;
}

/** The main thread's V8 heap in use and V8's external memory (Buffers, shared buffers) in a /metrics text, in bytes; -1 when absent. */
export function mainHeapIn(text: string | undefined): { used: number; external: number } {
  const one = (name: string): number => Number(new RegExp(`^${name} (\\d+(?:\\.\\d+)?)`, 'm').exec(text ?? '')?.[1] ?? -1);
  return { used: one('nodejs_heap_size_used_bytes'), external: one('nodejs_external_memory_bytes') };
}

/** The encode workers' V8 heaps in use in a /metrics text (`tao_encode_worker_heap_used_bytes`, summed over the workers), in bytes; -1 without one. */
export function workerHeapsIn(text: string | undefined): number {
  let sum = -1;
  for (const m of (text ?? '').matchAll(/^tao_encode_worker_heap_used_bytes\{[^}]*\} (\d+(?:\.\d+)?)/gm)) sum = Math.max(0, sum) + Number(m[1]);
  return sum;
}

/** The encode pool's regions of shared buffers (`tao_encode_shared_buffer_regions`), -1 each while /metrics has none. */
export function sharedRegionsIn(text: string | undefined): { inputs: number; outputs: number } {
  const of = (kind: string): number => {
    const m = new RegExp(`^tao_encode_shared_buffer_regions\\{kind="${kind}"\\} (\\d+)`, 'm').exec(text ?? '');
    return m ? Number(m[1]) : -1;
  };
  return { inputs: of('input'), outputs: of('output') };
}

/** The records the daemon on `port` has exported (`tao_events_exported_total`, summed); -1 while it does not serve yet. */
export async function exportedSoFar(port: number): Promise<number> {
  return exportedIn(await metricsText(port));
}
