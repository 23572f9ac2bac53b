/**
 * `type: google-secops` under credential and quota faults, on a `run --once` backfill of a
 * directory tree to the SecOps ingestion stand-in (test/support/secops-server.ts) with an OTLP
 * receiver alongside (fan-out). Credentials: workload identity federation, the library
 * exchanging a subject token at the STS stand-in for tokens that live 5 min + 2 s (so
 * google-auth-library renews them every 2 s, before they expire). Mid-backfill:
 *
 * 1. every token issued so far is revoked (an expiry the library could not see coming): the next
 *    request gets 401, one fresh token, and goes on;
 * 2. three 429s with `Retry-After: 1`: retried, honoured;
 * 3. the STS refuses the subject token (a disabled federation, `invalid_grant`) and the tokens are
 *    revoked, for a minute (5 s short): the pipeline holds (nothing arrives in SecOps, the
 *    checkpoint stays, nothing is dead-lettered, the refusal is logged with the destination and
 *    status), then the STS accepts again;
 *
 * and the run ends with every record once in SecOps and once in OTLP, exit 0, and neither the
 * subject token nor any access token in any output or state file.
 */
import { join } from 'node:path';
import { readFileSync, existsSync, readdirSync } from 'node:fs';
import { startOtlpReceiver, type ReceivedLogRecord } from '../../../test/support/otlp-receiver.js';
import { startSecOpsServer } from '../../../test/support/secops-server.js';
import { startStsServer } from '../../../test/support/google-sts-server.js';
import { WIF_AUDIENCE, writeWorkloadIdentityConfig } from '../../../test/support/google-credentials.js';
import { writeFixtureTree } from '../../../test/support/activity-fixtures.js';
import { judge, logLines, readDeadLetters, resultOf, seqCounts, sleep, waitFor, type Scenario, savedCheckpoint } from '../lib/harness.js';

const INSTANCE = '7f1e2d3c-0000-4000-8000-00000000abcd';

export const googleSecOps: Scenario = {
  name: 'google-secops',
  title: 'google-secops with an OTLP receiver: tokens revoked, 429s, the token endpoint refusing for a minute mid-backfill',
  async run(ctx, { short }) {
    const HOLD_MS = short ? 5_000 : 60_000;
    const BATCH = 500;
    const extra: string[] = [];
    const subject = 'eyJhbGciOiJSUzI1NiJ9.faults-workload-SUBJECT-token.sig';
    const sts = await startStsServer({ subjectToken: subject, audience: WIF_AUDIENCE, expiresIn: 302 });
    ctx.defer(() => sts.close());
    const secops = await startSecOpsServer({ verify: (t) => (sts.isValid(t) ? undefined : 'not issued by STS, expired or revoked') });
    ctx.defer(() => secops.close());
    secops.setDelay(20);
    const otlp = await startOtlpReceiver();
    ctx.defer(() => otlp.close());

    const work = ctx.dir('work');
    const tree = writeFixtureTree(join(work, 'logs'), short ? 20 : 60, 500);
    const { configFile } = writeWorkloadIdentityConfig(work, sts.tokenUrl, subject);
    const state = join(work, 'state');
    const config = ctx.writeConfig(work, {
      stateDir: state,
      pipeline: { batchSize: BATCH, maxInFlightBatches: 4 },
      tenants: [
        {
          id: 'acme',
          sources: [{ type: 'directory', path: join(work, 'logs') }],
          destinations: [
            { type: 'google-secops', endpoint: secops.url, project: 'faults-project', location: 'us', instance: INSTANCE, logType: 'TABLEAU_ACTIVITY', credentialsFile: configFile },
            { type: 'otlp', endpoint: otlp.url },
          ],
        },
      ],
    });
    const d = ctx.start(['run', '--once', '--retry-for', '10m', '--config', config]);

    // 1. tokens revoked before their expiry
    await waitFor(() => secops.logs.length >= 2 * BATCH || !d.alive, 30_000, 5);
    if (!d.alive) extra.push('the run ended before the faults began (make the backfill bigger)');
    const issuedBefore = sts.issued.length;
    for (const t of sts.issued) sts.revoke(t.token);
    await waitFor(() => secops.requests.some((r) => r.status === 401) || !d.alive, 15_000, 5);
    const revoked401 = secops.requests.filter((r) => r.status === 401).length;
    if (revoked401 === 0) extra.push('no 401 after the tokens were revoked');
    await waitFor(() => secops.requests.at(-1)?.status === 200 || !d.alive, 15_000, 5);

    // 2. throttled
    secops.respondNext({ status: 429, headers: { 'Retry-After': '1' } }, { status: 429, headers: { 'Retry-After': '1' } }, { status: 429, headers: { 'Retry-After': '1' } });
    await waitFor(() => secops.requests.filter((r) => r.status === 429).length >= 3 || !d.alive, 20_000, 5);
    await waitFor(() => secops.requests.at(-1)?.status === 200 || !d.alive, 20_000, 5);

    // 3. the token endpoint refuses our credentials
    sts.setSubjectToken('rotated-away');
    for (const t of sts.issued) sts.revoke(t.token);
    await sleep(500); // requests answered before the switch may still be on their way back
    const atHold = secops.logs.length;
    const otlpAtHold = otlp.records().length;
    await sleep(Math.min(2_000, HOLD_MS / 2));
    const cpEarly = savedCheckpoint(state, 'acme');
    await sleep(HOLD_MS - Math.min(2_000, HOLD_MS / 2));
    const cpLate = savedCheckpoint(state, 'acme');
    const during = secops.logs.length - atHold;
    if (during !== 0) extra.push(`${during} logs arrived in SecOps while no token could be had`);
    if (cpEarly !== cpLate) extra.push('the checkpoint moved while the credentials were refused');
    const letteredDuring = readDeadLetters(state, 'acme').length;
    if (letteredDuring > 0) extra.push(`${letteredDuring} dead letters written while the credentials were refused`);
    const held = logLines(d.output(), /holding the batch/).filter((l) => l.destination === 'google-secops' && l.status === 401).length;
    if (held === 0) extra.push('no log line named google-secops and the refusal');
    if (!d.alive) extra.push('the run gave up while the credentials were refused');
    const refusedExchanges = sts.exchanges.length - sts.issued.length;
    const otlpAfterHold = otlp.records().length;
    sts.setSubjectToken(subject);
    const acceptedAt = Date.now();

    const r = await d.exited;
    if (r.code !== 0) extra.push(`run exited ${r.code}`);
    const letters = readDeadLetters(state, 'acme');
    if (letters.length > 0) extra.push(`${letters.length} dead letters (refused credentials and 429s must not dead-letter anything)`);
    const valid = tree.records.map((x) => x.record.testSeq as number);
    // the OTLP side of the fan-out: every record once too
    const otlpJudged = judge(otlp.records(), letters, { valid, dupBound: 0, rssLimitMb: 400 }, ctx.peakRssMb);
    for (const f of otlpJudged.failures) extra.push(`otlp: ${f}`);
    // while SecOps holds, the other destination gets at most the batches already in flight
    const otlpDuringHold = otlpAfterHold - otlpAtHold;
    if (otlpDuringHold > 4 * BATCH) extra.push(`otlp received ${otlpDuringHold} records while google-secops held (more than the ${4 * BATCH} in flight)`);
    // every text the run wrote: no subject token, no access token
    const secrets = [subject, ...sts.issued.map((t) => t.token)];
    const walk = (dir: string): string[] => (existsSync(dir) ? readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(join(dir, e.name)) : [join(dir, e.name)])) : []);
    const texts = [ctx.allOutput(), ...walk(state).map((f) => readFileSync(f, 'utf8'))];
    const leaked = secrets.filter((s) => texts.some((t) => t.includes(s))).length;
    if (leaked > 0) extra.push(`${leaked} secrets (subject or access tokens) written to an output or state file`);
    if (secops.problems.length > 0) extra.push(`the ingestion stand-in saw ${secops.problems.length} malformed requests: ${secops.problems[0]}`);

    const received: ReceivedLogRecord[] = secops.logs.map((l) => ({ attributes: l.record.attributes }) as unknown as ReceivedLogRecord);
    const j = judge(received, letters, { valid, dupBound: 0, rssLimitMb: 400 }, ctx.peakRssMb);
    const otlpDup = [...seqCounts(otlp.records()).values()].filter((n) => n > 1).length;
    return resultOf(j, tree.records.length, ctx.peakRssMb, extra, [
      `${sts.issued.length} tokens issued (${issuedBefore} before the revocation), ${revoked401} requests answered 401 after it`,
      `${secops.requests.filter((q) => q.status === 429).length} requests throttled (429)`,
      `token endpoint refused for ${HOLD_MS / 1000} s: ${held} hold lines, checkpoint unchanged, nothing dead-lettered, ${refusedExchanges} token exchanges refused`,
      `otlp alongside: ${otlp.records().length} records, ${otlpDup} duplicated`,
      `finished ${Math.round((Date.now() - acceptedAt) / 1000)} s after the credentials were accepted again`,
    ]);
  },
};
