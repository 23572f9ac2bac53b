/** The in-flight limit: a batch takes a slot before it is processed and gives it back once settled (reading waits for a free one: backpressure). */
export class InFlightSlots {
  private free: number;
  private waiters: Array<() => void> = [];
  constructor(n: number) {
    this.free = n;
  }
  async acquire(): Promise<void> {
    if (this.free > 0) {
      this.free--;
      return;
    }
    await new Promise<void>((resolve) => this.waiters.push(resolve));
  }
  release(): void {
    const next = this.waiters.shift();
    if (next) next();
    else this.free++;
  }
}
