/**
 * Big enrichment lookup files on the real CLI (`run --once`):
 *
 * - enrichment-lookup-big: a tenant reads site events from a directory and takes its users and
 *   sites from lookup files of 200 000 users and 5 000 sites (the size of the enrichment issue;
 *   the events' actors among them). Every record arrives once with the actor's names and the
 *   site's name, nothing is dead-lettered, and the process's peak RSS stays under a limit the
 *   load used to exceed on its own (it peaked some 190 MB above a run without enrichment).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { startOtlpReceiver } from '../../../test/support/otlp-receiver.js';
import { judge, logLines, readDeadLetters, resultOf, type Scenario } from '../lib/harness.js';

const SITE = 'd5c3e9a2-6666-4c4d-9e5f-000000000006';
const ACTORS = 50;

export const enrichmentLookupBig: Scenario = {
  name: 'enrichment-lookup-big',
  title: 'lookup files of 200 000 users and 5 000 sites: every record arrives once with the names, the peak RSS stays bounded',
  async run(ctx, { short }) {
    const receiver = await startOtlpReceiver();
    ctx.defer(() => receiver.close());
    const work = ctx.dir('work');
    // the lookup files
    const sites = [{ id: SITE, name: 'Finance', contentUrl: 'finance' }];
    while (sites.length < 5000) sites.push({ id: randomUUID(), name: `Site ${sites.length}`, contentUrl: `site${sites.length}` });
    const users: string[] = [];
    for (let i = 0; i < ACTORS; i++) users.push(JSON.stringify({ id: `actor-${i}`, name: `actor${i}`, email: `actor${i}@acme.example`, fullName: `Actor ${i}`, siteRoles: { [SITE]: 'Creator' } }));
    for (let i = users.length; i < 200_000; i++) users.push(JSON.stringify({ id: randomUUID(), name: `user${i}@example.com`, email: `user${i}@example.com`, fullName: `User ${i}`, siteRoles: { [sites[i % sites.length]!.id]: 'Viewer' } }));
    writeFileSync(join(work, 'users.ndjson'), users.join('\n') + '\n');
    writeFileSync(join(work, 'sites.ndjson'), sites.map((s) => JSON.stringify(s)).join('\n') + '\n');
    // the events
    const logs = join(work, 'logs');
    const valid: number[] = [];
    const objects = short ? 4 : 20;
    const perObject = short ? 250 : 500;
    let seq = 0;
    for (let o = 0; o < objects; o++) {
      const dir = join(logs, 'pod=prod-a', `siteLuid=${SITE}`, 'y=2026', 'm=11', 'd=29', `h=${String(o % 24).padStart(2, '0')}`, 'eventType=hist_access_view');
      mkdirSync(dir, { recursive: true });
      const lines: string[] = [];
      for (let i = 0; i < perObject; i++, seq++) {
        valid.push(seq);
        lines.push(JSON.stringify({ eventTime: `2026-11-29T${String(o % 24).padStart(2, '0')}:${String(i % 60).padStart(2, '0')}:07.123Z`, actorUserLuid: `actor-${seq % ACTORS}`, siteLuid: SITE, testSeq: seq }));
      }
      writeFileSync(join(dir, `part-${o}.txt`), lines.join('\n') + '\n');
    }
    const state = join(work, 'state');
    const config = ctx.writeConfig(work, {
      stateDir: state,
      tenants: [
        {
          id: 'enriched',
          sources: [{ type: 'directory', path: logs }],
          destinations: [{ type: 'otlp', endpoint: receiver.url }],
          enrichment: { users: { file: join(work, 'users.ndjson') }, sites: { file: join(work, 'sites.ndjson') }, initialWait: '5m' },
        },
      ],
    });
    const r = await ctx.run(['run', '--once', '--config', config], {}, 180_000);
    const extra: string[] = [];
    if (r.code !== 0) extra.push(`run exited ${r.code}${r.timedOut ? ' (timed out)' : ''}`);
    const out = ctx.allOutput();
    const loaded = logLines(out, 'enrichment users loaded');
    if (loaded.length !== 1 || loaded[0]!.kept !== 200_000) extra.push(`users loaded: ${JSON.stringify(loaded.map((l) => l.kept))} (want one load of 200000)`);
    const records = receiver.records();
    const unnamed = records.filter((rec) => {
      const n = String(rec.attributes['user.id'] ?? '').replace('actor-', '');
      return rec.attributes['user.full_name'] !== `Actor ${n}` || rec.attributes['user.email'] !== `actor${n}@acme.example` || rec.resource['tableau.site.name'] !== 'Finance';
    });
    if (unnamed.length > 0) extra.push(`${unnamed.length} records without the names from the lookup files`);
    // a run without enrichment peaks at about 105 MB here; the load adds some 56 MB now (190 MB before)
    const j = judge(records, readDeadLetters(state, 'enriched'), { valid, dupBound: 0, rssLimitMb: 230 }, ctx.peakRssMb);
    return resultOf(j, valid.length, ctx.peakRssMb, extra, [`${records.length - unnamed.length} of ${records.length} records with the names; 200 000 users and 5 000 sites loaded`]);
  },
};
