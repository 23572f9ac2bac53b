/**
 * The bench's and the soak's OTLP receiver (scripts/bench/discarding-receiver.mjs), run in a
 * process of its own by scripts/bench/receiver-process.ts: what it counts is what arrived
 * (requests and bytes of POST /v1/logs, not other paths), a reset zeroes the counts, and it exits
 * when its parent closes its stdin.
 */
import { describe, expect, it } from 'vitest';
import { ReceiverProcess } from '../scripts/bench/receiver-process.js';

describe('the bench receiver in its own process', () => {
  it('counts the requests and bytes posted to /v1/logs, answers 200, and starts again from zero at a reset', async () => {
    const receiver = new ReceiverProcess();
    const base = await receiver.start();
    try {
      expect(await receiver.counts()).toEqual({ requests: 0, bytes: 0 });
      const bodies = [Buffer.alloc(70_000, 7), Buffer.from([0x0a, 0x00])];
      for (const body of bodies) {
        const res = await fetch(`${base}/v1/logs`, { method: 'POST', headers: { 'Content-Type': 'application/x-protobuf' }, body });
        expect(res.status).toBe(200);
        await res.arrayBuffer();
      }
      const other = await fetch(`${base}/v1/traces`, { method: 'POST', body: Buffer.alloc(100) });
      expect(other.status).toBe(404);
      await other.arrayBuffer();
      expect(await receiver.counts()).toEqual({ requests: 2, bytes: 70_002 });

      await receiver.reset();
      expect(await receiver.counts()).toEqual({ requests: 0, bytes: 0 });
    } finally {
      await receiver.stop();
    }
  });

  it('stops when its standard input closes: the port no longer answers', async () => {
    const receiver = new ReceiverProcess();
    const base = await receiver.start();
    expect((await receiver.counts()).requests).toBe(0);
    await receiver.stop();
    await expect(fetch(`${base}/counts`)).rejects.toThrow();
  });
});
