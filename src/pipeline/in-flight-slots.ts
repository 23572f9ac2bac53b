/**
 * The in-flight limit: a batch takes a slot, and its raw bytes from the byte budget, before it is
 * processed, and gives both back once settled (reading waits meanwhile: backpressure). At most
 * `maxBatches` batches at a time, holding at most `maxBytes` between them; a batch larger than the
 * budget on its own goes when nothing else is in flight. First come, first served.
 */
export class InFlightSlots {
  private batches = 0;
  private bytes = 0;
  private readonly waiters: Array<{ bytes: number; resolve: () => void }> = [];

  constructor(
    private readonly maxBatches: number,
    private readonly maxBytes: number = Infinity,
  ) {}

  async acquire(bytes = 0): Promise<void> {
    if (this.waiters.length === 0 && this.fits(bytes)) {
      this.take(bytes);
      return;
    }
    await new Promise<void>((resolve) => this.waiters.push({ bytes, resolve }));
  }

  /** Give back what `acquire(bytes)` took. */
  release(bytes = 0): void {
    this.batches--;
    this.bytes -= bytes;
    while (this.waiters.length > 0 && this.fits(this.waiters[0]!.bytes)) {
      const next = this.waiters.shift()!;
      this.take(next.bytes);
      next.resolve();
    }
  }

  /** Batches and bytes in flight now. */
  get inFlight(): { batches: number; bytes: number } {
    return { batches: this.batches, bytes: this.bytes };
  }

  private fits(bytes: number): boolean {
    return this.batches === 0 || (this.batches < this.maxBatches && this.bytes + bytes <= this.maxBytes);
  }

  private take(bytes: number): void {
    this.batches++;
    this.bytes += bytes;
  }
}
