/**
 * stderr as the daemon's logs and progress bars share it. On a terminal, progress lines stay at
 * the bottom ("status area") and are redrawn in place; a log line is printed above them (the
 * area is erased, the line written, the area drawn again), so the two never garble each other.
 * Everything is written synchronously (pino's sonic-boom in sync mode), so nothing is lost when
 * the process exits right after a line.
 */
import { pino } from 'pino';

export interface TextSink {
  write(text: string): void;
}

const ERASE_LINE_AND_BELOW = '\x1b[0J';
const up = (n: number): string => `\x1b[${n}A`;
const CR = '\r';

export class StatusArea {
  private lines: string[] = [];

  constructor(
    private readonly sink: TextSink,
    private readonly columns: () => number = () => 100,
  ) {}

  get active(): boolean {
    return this.lines.length > 0;
  }

  /** Write log text (whole lines) above the status area. */
  print(text: string): void {
    if (this.lines.length === 0) {
      this.sink.write(text);
      return;
    }
    this.sink.write(this.erase() + text + this.render(this.lines));
  }

  /** Replace the status lines (drawn at the bottom, each cut to the terminal width). */
  update(lines: string[]): void {
    const next = lines.map((l) => fit(l, this.columns()));
    this.sink.write(this.erase() + this.render(next));
    this.lines = next;
  }

  /** Leave the last status lines on the screen as ordinary lines and stop redrawing them. */
  done(): void {
    this.lines = [];
  }

  private erase(): string {
    return this.lines.length === 0 ? '' : CR + up(this.lines.length) + ERASE_LINE_AND_BELOW;
  }

  private render(lines: string[]): string {
    return lines.map((l) => l + '\n').join('');
  }
}

/**
 * Cut a line to `width` visible characters (ANSI colour codes do not count). Any other control
 * character (a name from the data could carry one) is shown as a visible `\uXXXX` escape.
 */
export function fit(line: string, width: number): string {
  const max = Math.max(20, width - 1);
  let visible = 0;
  let out = '';
  for (let i = 0; i < line.length; i++) {
    if (line[i] === '\x1b') {
      const m = /^\x1b\[[0-9;]*m/.exec(line.slice(i));
      if (m) {
        out += m[0];
        i += m[0].length - 1;
        continue;
      }
    }
    if (visible >= max) {
      out += '\x1b[0m';
      break;
    }
    const c = line.charCodeAt(i);
    out += c < 0x20 || (c >= 0x7f && c <= 0x9f) ? `\\u${c.toString(16).padStart(4, '0')}` : line[i];
    visible++;
  }
  return out;
}

let stderrSink: TextSink | undefined;
let stderrArea: StatusArea | undefined;

/** The process's stderr as a synchronous sink. */
export function stderrWriter(): TextSink {
  stderrSink ??= pino.destination({ fd: 2, sync: true });
  return stderrSink;
}

/** The one status area of stderr (used by the logger and by the progress display). */
export function stderrStatusArea(): StatusArea {
  stderrArea ??= new StatusArea(stderrWriter(), () => process.stderr.columns || 100);
  return stderrArea;
}
