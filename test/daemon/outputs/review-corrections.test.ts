/**
 * What becomes of a person's corrections when the document is extracted again (docs/decisions.md,
 * "Corrections and reruns"): a rerun whose extraction of the corrected field is what it was keeps
 * the correction silently; one that reads the document anew keeps the person's value over the
 * service's new reading and says so; one whose extraction no longer has the field drops the
 * correction and says so. "Says so": a warning in the daemon's log and a row in the audit trail
 * (`docex-sync review log`).
 */
import { readdir, readFile, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createNodeClient } from '@docex/shared/node';
import type { RunningDaemon } from '../../../daemon/src/app/daemon.ts';
import { createLogger } from '../../../daemon/src/common/logging.ts';
import { runRerun } from '../../../daemon/src/jobs/reruns.ts';
import type { ResultJson } from '../../../daemon/src/outputs/results.ts';
import { AuditTrail } from '../../../daemon/src/store/audit.ts';
import { call } from '../../support/http-call.ts';
import { SECRET, until, type World } from '../helpers.ts';
import { csvRecords, reviewWorld } from '../review-helpers.ts';
import { Writable } from 'node:stream';

let world: World | undefined;
afterEach(async () => {
  await world?.cleanup();
  world = undefined;
});

/** An invoice without a Total: held (its confidence is below the watch's 0.8). */
const LOW = 'Invoice number: L-1\nWidget | 4,00\nGadget | 6,00\n';

async function correctOnPage(daemon: RunningDaemon, id: number, values: Record<string, string>) {
  const port = (daemon.http!.address() as AddressInfo).port;
  const answer = await call(port, '/api/correct', {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-docex-sync-request': 'correct',
      origin: `http://127.0.0.1:${port}`,
    },
    body: JSON.stringify({ id, values, by: 'Anna' }),
  });
  expect(answer.json()).toMatchObject({ approved: true });
}

/** A held invoice corrected to a Total of 12,50 on the page and archived; the rerun's means. */
async function corrected() {
  const w = (world = await reviewWorld({ extra: 'http: { port: 0 }\n' }));
  await writeFile(join(w.dir, 'inbox', 'low.txt'), LOW);
  const daemon = await w.start();
  await until('held for review', () => daemon.db.fileCounts.counts().review === 1, 30_000);
  const id = daemon.db.fileCounts.inReview(1)[0]!.id;
  await correctOnPage(daemon, id, { Total: '12,50' });
  await until('archived', () => daemon.db.files.get(id)!.state === 'archived', 30_000);
  const client = createNodeClient({ baseUrl: w.emulator.url, apiKey: SECRET });
  const logs: string[] = [];
  const log = createLogger('debug', {
    pretty: false,
    destination: new Writable({ write: (c, _e, done) => void (logs.push(String(c)), done()) }),
  });
  const rerun = (override: boolean) =>
    runRerun(
      { db: daemon.db, client, log, config: w.config(), refresh: { firstDelayMs: 20, windowMs: 5_000 } },
      { name: 'cli', template_id: w.templateId, override, dry_run: false },
    );
  const results = join(w.dir, 'results');
  const read = async () => {
    const names = await readdir(results);
    const pick = (suffix: string) =>
      join(
        results,
        names.find((n) => n.startsWith('low.') && n.endsWith(suffix))!,
      );
    return {
      json: JSON.parse(await readFile(pick('.json'), 'utf8')) as ResultJson,
      fields: (await csvRecords(pick('.fields.csv')))[0]!,
    };
  };
  const rename = async (from: string, to: string) => {
    const template = await client.fetchTemplate({ template_id: w.templateId });
    for (const field_id of template.field_ids!)
      if ((await client.fetchField({ field_id })).name === from)
        await client.updateField({ field_id, name: to });
  };
  const audit = () => new AuditTrail(daemon.db.db).since(0).filter((r) => r.action === 'rerun');
  return { daemon, id, rerun, read, rename, audit, logs };
}

const totalOf = (json: ResultJson) =>
  (json.document.General_fields as Record<string, { value: unknown }>).Total;

describe('corrections and reruns', () => {
  it(
    'a rerun that reads the same keeps the correction, and rewrites nothing',
    { timeout: 120_000 },
    async () => {
      const { rerun, read, audit } = await corrected();
      const before = await read();
      expect(totalOf(before.json)).toMatchObject({ value: 12.5, confidence: 1, corrected_by: 'Anna' });
      const outcome = await rerun(true);
      expect(outcome.refresh).toEqual({ files: 1, rewritten: 0, unchanged: 1, not_seen: 0 });
      expect(await read()).toEqual(before);
      expect(audit()).toEqual([]);
    },
  );

  it(
    'a rerun that changes the extraction keeps the person’s value, the service’s new one beside it, and says so',
    { timeout: 120_000 },
    async () => {
      const { id, rerun, read, rename, audit, logs } = await corrected();
      await rename('Invoice number', 'Number');
      const outcome = await rerun(false);
      expect(outcome.refresh).toMatchObject({ files: 1, rewritten: 1 });
      const after = await read();
      expect(after.json.refreshed_after_rerun).toBe('cli');
      expect(after.json.document.General_fields).toHaveProperty('Number');
      expect(totalOf(after.json)).toMatchObject({ value: 12.5, confidence: 1, corrected_by: 'Anna' });
      expect(after.json.corrections).toMatchObject([{ field: 'Total', to: 12.5, by: 'Anna' }]);
      expect(Number(after.fields.Total)).toBe(12.5);
      expect(audit()).toMatchObject([
        {
          action: 'rerun',
          file_id: id,
          field: 'Total',
          old_value: '12.5',
          new_value: '12.5',
          note: expect.stringMatching(/^correction kept/),
        },
      ]);
      expect(logs.join('')).toContain('correction kept after the rerun');
    },
  );

  it(
    'a rerun whose extraction has no such field any more drops the correction, and says so',
    { timeout: 120_000 },
    async () => {
      const { id, rerun, read, rename, audit, logs } = await corrected();
      await rename('Total', 'Grand total');
      await rerun(false);
      const after = await read();
      expect(after.json.document.General_fields).not.toHaveProperty('Total');
      expect(after.json.corrections ?? []).toEqual([]);
      expect(audit()).toMatchObject([
        {
          action: 'rerun',
          file_id: id,
          field: 'Total',
          old_value: '12.5',
          new_value: null,
          note: expect.stringMatching(/^correction dropped/),
        },
      ]);
      expect(logs.join('')).toContain('correction dropped after the rerun');
    },
  );
});
