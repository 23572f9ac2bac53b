/**
 * The short form of `npm run faults` (scripts/faults/), inside `npm test` so CI runs it: each
 * scenario drives the built CLI against local test servers and must pass (a scenario this
 * machine cannot run, such as the tmpfs one without root, reports `skip`). About three minutes.
 */
import { describe, it, expect } from 'vitest';
import { runScenarios, formatTable, type Row } from '../scripts/faults/run-faults.js';
import { SCENARIOS } from '../scripts/faults/scenarios/index.js';

const rows: Row[] = [];

describe('faults (short)', () => {
  for (const s of SCENARIOS) {
    it(`${s.name}: ${s.title}`, async () => {
      const [row] = await runScenarios({ short: true, only: [s.name], log: () => undefined });
      rows.push(row!);
      if (rows.length === SCENARIOS.length) console.log(`\n${formatTable(rows)}\n`);
      expect(row!.outcome, row!.notes).not.toBe('FAIL');
    }, 240_000);
  }
});
