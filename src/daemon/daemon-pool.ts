/** The daemon's encode worker pool, counting the tasks it holds so that a pool a reload replaced closes once they are done. */
import { EncodeWorkerPool } from '../pipeline/worker-pool.js';
import type { ChunkResult, ChunkTask } from '../pipeline/chunk-processor.js';

export class DaemonPool extends EncodeWorkerPool {
  private outstanding = 0;
  private idle: Array<() => void> = [];

  constructor(
    size: number,
    init: ConstructorParameters<typeof EncodeWorkerPool>[1],
    /** The plan's pool key: a reload builds a new pool when it changes. */
    readonly key: string,
  ) {
    super(size, init);
  }

  override run(task: ChunkTask): Promise<ChunkResult> {
    this.outstanding++;
    return super.run(task).finally(() => {
      if (--this.outstanding === 0) for (const r of this.idle.splice(0)) r();
    });
  }

  async closeWhenIdle(): Promise<void> {
    while (this.outstanding > 0) await new Promise<void>((r) => this.idle.push(r));
    await this.close();
  }
}
