/**
 * Progress of `run --once` (backfills): per source, objects read of those listed, events,
 * rate, bytes and, when the total is known, a bar and an ETA.
 *
 * - On a terminal (stderr is a TTY): one line per source, redrawn in place a few times a second
 *   at the bottom of the screen; log lines scroll above them (see terminal.ts).
 * - Otherwise: a plain `progress` log line per source every `--progress-interval`.
 *
 * The total is known once the source listed everything it has (no `hasMore` backlog); the ETA
 * uses bytes when the source knows object sizes (directory, S3), else objects, at the rate of
 * the last ten seconds.
 */
import type { Logger } from './logger.js';
import type { StatusArea } from './terminal.js';
import type { SourceProgressView } from './daemon.js';

interface Sample {
  at: number;
  events: number;
  bytes: number;
  objects: number;
}

export interface ProgressRates {
  eventsPerSecond: number;
  bytesPerSecond: number;
  objectsPerSecond: number;
}

export interface ProgressFigures {
  tenant: string;
  source: string;
  objectsRead: number;
  objectsListed: number;
  events: number;
  exported: number;
  bytesRead: number;
  eventsPerSecond: number;
  /** 0-100 when the total is known. */
  percent?: number;
  etaSeconds?: number;
  done: boolean;
}

const WINDOW_MS = 10_000;

/** Figures for one source from its counters and its recent rates. */
export function progressFigures(v: SourceProgressView, rates: ProgressRates): ProgressFigures {
  const p = v.progress;
  const totalKnown = !v.hasMore && p.objectsListed > 0;
  const done = totalKnown && p.objectsRead >= p.objectsListed;
  const out: ProgressFigures = {
    tenant: v.tenant,
    source: v.source,
    objectsRead: p.objectsRead,
    objectsListed: p.objectsListed,
    events: p.events,
    exported: p.exported,
    bytesRead: p.bytesRead,
    eventsPerSecond: Math.round(rates.eventsPerSecond),
    done,
  };
  if (totalKnown) {
    const byBytes = p.sizesKnown && p.bytesListed > 0;
    const fraction = byBytes ? p.bytesRead / p.bytesListed : p.objectsRead / p.objectsListed;
    out.percent = Math.max(0, Math.min(100, Math.floor(fraction * 100)));
    if (done) out.etaSeconds = 0;
    else {
      const remaining = byBytes ? p.bytesListed - p.bytesRead : p.objectsListed - p.objectsRead;
      const rate = byBytes ? rates.bytesPerSecond : rates.objectsPerSecond;
      if (rate > 0 && remaining > 0) out.etaSeconds = Math.ceil(remaining / rate);
    }
  }
  return out;
}

/** One terminal line: `tenant source [████░░░░] 45% 12/40 objects 3,400 events 1,234/s 12.3 MB ETA 0:23`. */
export function progressLine(f: ProgressFigures, colors = false): string {
  const bar = f.percent === undefined ? '[' + ' '.repeat(BAR) + ']' : '[' + '█'.repeat(Math.round((f.percent / 100) * BAR)).padEnd(BAR, '░') + ']';
  const pct = f.percent === undefined ? '   ' : `${String(f.percent).padStart(3)}%`;
  const objects = f.percent === undefined ? `${count(f.objectsRead)}/${count(f.objectsListed)}+ objects` : `${count(f.objectsRead)}/${count(f.objectsListed)} objects`;
  const eta = f.done ? 'done' : f.etaSeconds !== undefined ? `ETA ${duration(f.etaSeconds)}` : f.objectsListed === 0 ? 'listing…' : '';
  const name = `${f.tenant} ${f.source}`;
  const head = colors ? `\x1b[1m${name}\x1b[0m` : name;
  return [head, pct, bar, eta, objects, `${count(f.events)} events`, `${count(f.eventsPerSecond)}/s`, bytes(f.bytesRead)].filter((s) => s.trim() !== '').join('  ');
}

const BAR = 16;

export function count(n: number): string {
  return Math.round(n).toLocaleString('en-US');
}

export function bytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ['KB', 'MB', 'GB', 'TB'];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(1)} ${units[i]}`;
}

export function duration(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = s % 60;
  return h > 0 ? `${h}:${String(m).padStart(2, '0')}:${String(sec).padStart(2, '0')}` : `${m}:${String(sec).padStart(2, '0')}`;
}

export interface ProgressReporterOptions {
  /** Redraw lines in place (a terminal) or log plain lines. */
  tty: boolean;
  /** Plain mode: milliseconds between two lines per source (0: none). */
  intervalMs: number;
  log: Logger;
  area?: StatusArea;
  colors?: boolean;
  now?: () => number;
}

export class ProgressReporter {
  private timer: NodeJS.Timeout | undefined;
  private readonly samples = new Map<string, Sample[]>();
  private readonly now: () => number;

  constructor(
    private readonly views: () => SourceProgressView[],
    private readonly options: ProgressReporterOptions,
  ) {
    this.now = options.now ?? Date.now;
  }

  start(): void {
    const every = this.options.tty ? 250 : this.options.intervalMs;
    if (every <= 0 || (this.options.tty && !this.options.area)) return;
    this.timer = setInterval(() => this.tick(), every);
    this.timer.unref();
  }

  /** Stop; on a terminal the last state stays on the screen. */
  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    if (this.options.tty && this.options.area) {
      this.draw();
      this.options.area.done();
    }
  }

  /** Figures now (and a new rate sample). */
  figures(): ProgressFigures[] {
    const now = this.now();
    return this.views().map((v) => progressFigures(v, this.rates(`${v.tenant}\n${v.source}`, v, now)));
  }

  tick(): void {
    if (this.options.tty) this.draw();
    else for (const f of this.figures()) if (!f.done || f.objectsRead > 0) this.options.log.info({ tenant: f.tenant, source: f.source, objectsRead: f.objectsRead, objectsListed: f.objectsListed, events: f.events, exported: f.exported, bytesRead: f.bytesRead, eventsPerSecond: f.eventsPerSecond, ...(f.percent !== undefined ? { percent: f.percent } : {}), ...(f.etaSeconds !== undefined ? { etaSeconds: f.etaSeconds } : {}) }, 'progress');
  }

  private draw(): void {
    const lines = this.figures().map((f) => progressLine(f, this.options.colors));
    this.options.area?.update(lines);
  }

  private rates(key: string, v: SourceProgressView, now: number): ProgressRates {
    const list = this.samples.get(key) ?? [];
    list.push({ at: now, events: v.progress.events, bytes: v.progress.bytesRead, objects: v.progress.objectsRead });
    while (list.length > 2 && now - list[0]!.at > WINDOW_MS) list.shift();
    this.samples.set(key, list);
    const first = list[0]!;
    const dt = (now - first.at) / 1000;
    if (dt <= 0) return { eventsPerSecond: 0, bytesPerSecond: 0, objectsPerSecond: 0 };
    return {
      eventsPerSecond: (v.progress.events - first.events) / dt,
      bytesPerSecond: (v.progress.bytesRead - first.bytes) / dt,
      objectsPerSecond: (v.progress.objectsRead - first.objects) / dt,
    };
  }
}
