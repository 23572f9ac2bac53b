/**
 * `type: sentinel` under the faults of its two services, on a `run --once` backfill of a
 * directory tree: a Microsoft Entra ID stand-in over TLS (a CA made for the run, trusted through
 * NODE_EXTRA_CA_CERTS) and a Logs Ingestion API stand-in that takes only the tokens Entra issued
 * (test/support/entra-server.ts, logs-ingestion-server.ts). All at once, mid-run:
 *
 * - tokens live 6 s (30 s long form): refreshed before they expire, over and over;
 * - the token in use is revoked: the next call gets 401, one fresh token, and goes through;
 * - the API throttles (429 with `Retry-After: 1`) a few times;
 * - the API takes at most 300 kB a call (a proxy's limit, below the 1 MB the daemon fills):
 *   413, the batches are split, nothing is dead-lettered (no row is that big alone);
 * - the client secret is rotated at Entra for 12 s (45 s long) and the daemon's is refused
 *   (`AADSTS7000215`): the token in use serves until its last quarter, then the pipeline holds
 *   (nothing arrives, the checkpoint stays, no dead letter, the refusal logged), then the secret
 *   is accepted again and the run finishes.
 *
 * Every record once, none dead-lettered, exit 0, and neither the secret nor any token in the
 * output or the state.
 */
import { join } from 'node:path';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { startEntraServer } from '../../../test/support/entra-server.js';
import { startIngestionServer } from '../../../test/support/logs-ingestion-server.js';
import { hasOpenssl, makeTestCertificates } from '../../../test/support/hec-server.js';
import { writeFixtureTree } from '../../../test/support/activity-fixtures.js';
import type { ReceivedLogRecord } from '../../../test/support/otlp-receiver.js';
import { judge, logLines, readDeadLetters, resultOf, sleep, waitFor, type Scenario, savedCheckpoint } from '../lib/harness.js';

const TENANT = '7f3c1a2b-0000-4000-8000-00000000cccc';
const CLIENT = '0b8e5d11-0000-4000-8000-00000000dddd';
const SECRET = 'faults-entra-SECRET-3a9d5e71c0b4';
const DCR = 'dcr-fa017500000000000000000000000001';

export const sentinel: Scenario = {
  name: 'sentinel',
  title: 'sentinel: short-lived tokens, a token revoked (401), 429, a 300 kB call limit (413), the client secret refused for a while',
  async run(ctx, { short }) {
    if (!hasOpenssl()) return { eventsIn: 0, delivered: 0, duplicates: 0, deadLettered: 0, peakRssMb: 0, outcome: 'skip', notes: 'openssl not available to make the test CA' };
    const LIFETIME_S = short ? 6 : 30;
    const HOLD_MS = short ? 12_000 : 45_000;
    const work = ctx.dir('work');
    const certs = makeTestCertificates(ctx.dir('certs'));
    const entra = await startEntraServer({ tls: certs, tenantId: TENANT, clientId: CLIENT, clientSecret: SECRET });
    ctx.defer(() => entra.close());
    const ingestion = await startIngestionServer({ dcrImmutableId: DCR, stream: 'Custom-TableauActivity_CL', validToken: entra.valid, tls: certs });
    ctx.defer(() => ingestion.close());
    entra.setLifetime(LIFETIME_S);
    ingestion.setMaxCallBytes(300_000);
    ingestion.setDelay(250); // a slow intake: the run lasts through every phase

    const tree = writeFixtureTree(join(work, 'logs'), short ? 48 : 160, 500);
    const state = join(work, 'state');
    const config = ctx.writeConfig(work, {
      stateDir: state,
      pipeline: { batchSize: 500, maxInFlightBatches: 4 },
      tenants: [
        {
          id: 'acme',
          sources: [{ type: 'directory', path: join(work, 'logs') }],
          destinations: [{ type: 'sentinel', endpoint: ingestion.url, dcrImmutableId: DCR, credential: { type: 'client-secret', tenantId: TENANT, clientId: CLIENT, clientSecretEnv: 'TAO_FAULTS_AZURE_SECRET', authorityHost: entra.url } }],
        },
      ],
    });
    const rowsNow = (): number => ingestion.rows.length;
    const d = ctx.start(['run', '--once', '--retry-for', '10m', '--config', config], { TAO_FAULTS_AZURE_SECRET: SECRET, NODE_EXTRA_CA_CERTS: certs.caFile });
    const extra: string[] = [];

    // revoke the token in use once a few batches are in
    await waitFor(() => rowsNow() >= 1_000 || !d.alive, 60_000, 5);
    const revoked = ingestion.calls.at(-1)?.token;
    if (revoked) entra.revoke(revoked);
    await waitFor(() => ingestion.calls.some((c) => c.status === 204 && c.token !== revoked) || !d.alive, 30_000, 5);
    ingestion.respondNext(...Array.from({ length: 3 }, () => ({ status: 429, headers: { 'Retry-After': '1' }, body: { error: { code: 'TooManyRequests', message: 'slow down' } } })));
    await waitFor(() => ingestion.calls.filter((c) => c.status === 429).length >= 3 || !d.alive, 30_000, 5);
    if (!d.alive) extra.push('the run ended before the secret was rotated (make the backfill bigger)');

    // the secret rotated at Entra: once the token in use is due for refresh, nothing can be sent
    entra.setClientSecret('faults-entra-ROTATED-secret-77e1');
    const rotatedAt = Date.now();
    // the token in use is handed out until its last quarter (refreshing it fails now); measured from past its expiry
    await sleep(LIFETIME_S * 1_000 + 1_500);
    const atHold = rowsNow();
    const cpEarly = savedCheckpoint(state, 'acme');
    await sleep(Math.max(0, HOLD_MS - (Date.now() - rotatedAt)));
    const cpLate = savedCheckpoint(state, 'acme');
    const during = rowsNow() - atHold;
    if (during !== 0) extra.push(`${during} rows arrived while the client secret was refused`);
    if (cpEarly !== cpLate) extra.push('the checkpoint moved while the client secret was refused');
    const letteredDuring = readDeadLetters(state, 'acme').length;
    if (letteredDuring > 0) extra.push(`${letteredDuring} dead letters written while the client secret was refused`);
    const refusedSignIns = entra.requests.filter((r) => r.status === 401).length;
    if (refusedSignIns === 0) extra.push('Entra never refused the old secret (the hold was not exercised)');
    const heldLines = logLines(d.output(), /holding the batch/).filter((l) => l.destination === 'sentinel' && /AADSTS7000215/.test(JSON.stringify(l))).length;
    if (heldLines === 0) extra.push('no log line named the destination and the refused credential');
    if (!d.alive) extra.push('the run gave up while the secret was refused');
    entra.setClientSecret(SECRET);
    const acceptedAt = Date.now();
    const r = await d.exited;
    if (r.code !== 0) extra.push(`run exited ${r.code}`);

    const letters = readDeadLetters(state, 'acme');
    if (letters.length > 0) extra.push(`${letters.length} dead letters (no row was too big alone; refusals must not dead-letter)`);
    const calls401 = ingestion.calls.filter((c) => c.status === 401).length;
    if (calls401 < 1) extra.push('the revoked token was never refused (the 401 path was not exercised)');
    const calls413 = ingestion.calls.filter((c) => c.status === 413).length;
    if (calls413 === 0) extra.push('no call over the 300 kB limit (the split was not exercised)');
    if (entra.tokens.length < 3) extra.push(`only ${entra.tokens.length} tokens issued (refresh before expiry not exercised)`);
    const secrets = [SECRET, ...entra.tokens.map((t) => t.token)];
    const output = ctx.allOutput();
    const walk = (dir: string): string[] => (existsSync(dir) ? readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(join(dir, e.name)) : [join(dir, e.name)])) : []);
    const stateText = walk(state).map((f) => readFileSync(f, 'utf8')).join('\n');
    const leaked = secrets.filter((s) => output.includes(s) || stateText.includes(s)).length;
    if (leaked > 0) extra.push(`${leaked} secrets or tokens in the output or the state`);

    // rows → what the judge reads (the test sequence of each record)
    const received = ingestion.rows.map((row) => ({ attributes: { 'tableau.test_seq': (row.Attributes as Record<string, unknown>)['tableau.test_seq'] } }) as unknown as ReceivedLogRecord);
    const j = judge(received, letters, { valid: tree.records.map((x) => x.record.testSeq as number), dupBound: 0, rssLimitMb: 400 }, ctx.peakRssMb);
    return resultOf(j, tree.records.length, ctx.peakRssMb, extra, [
      `${entra.tokens.length} tokens issued (lifetime ${LIFETIME_S} s), ${calls401} calls answered 401, ${ingestion.calls.filter((c) => c.status === 429).length} answered 429, ${calls413} answered 413 (split)`,
      `secret refused ${HOLD_MS / 1000} s: ${refusedSignIns} sign-ins refused, ${heldLines} hold lines, checkpoint unchanged, nothing dead-lettered`,
      `finished ${Math.round((Date.now() - acceptedAt) / 1000)} s after the secret was accepted again; no secret or token in output or state`,
    ]);
  },
};
