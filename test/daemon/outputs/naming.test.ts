/**
 * Names from the data, end to end against the emulator: archived originals and result files named
 * by archive_name / result_name from the extracted fields, hostile values kept inside the configured
 * folders, two documents with the same data never overwriting each other.
 */
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createNodeClient } from '@docex/shared/node';
import { filesUnder, makeWorld, SECRET, until, type World } from '../helpers.ts';

let world: World | undefined;
afterEach(async () => {
  await world?.cleanup();
  world = undefined;
});

const doc = (supplier: string | undefined, number: string, note = '') =>
  `${supplier === undefined ? '' : `Supplier: ${supplier}\n`}Invoice number: ${number}\nTotal: 10,00\n${note}`;

describe('names from the data', () => {
  it(
    'archives and results are named from the fields; hostile values stay inside; same data gets (2)',
    { timeout: 90_000 },
    async () => {
      world = await makeWorld({
        watchYaml: [
          "    archive_name: '{yyyy}/{field:Supplier|no supplier}/{field:Invoice number}{ext}'",
          "    result_name: '{field:Supplier}/{field:Invoice number} {template}'",
          "    name_missing: '_none'",
        ].join('\n'),
      });
      const client = createNodeClient({ baseUrl: world.emulator.url, apiKey: SECRET });
      await client.createField({
        template_id: world.templateId,
        name: 'Supplier',
        type: 'General fields',
        format: 'text',
        position: 5,
      });
      const inbox = join(world.dir, 'inbox');
      await mkdir(inbox, { recursive: true });
      await writeFile(join(inbox, 'one.pdf'), doc('ACME GmbH', 'R-1'));
      await writeFile(join(inbox, 'two.pdf'), doc('ACME GmbH', 'R-1', 'a second scan')); // same data, other bytes
      await writeFile(join(inbox, 'evil.pdf'), doc('../../../../tmp/owned', 'CON'));
      await writeFile(join(inbox, 'nul.pdf'), doc('a\u0001b/..\\..', '..'));
      await writeFile(join(inbox, 'none.pdf'), doc(undefined, 'R-9'));
      const daemon = await world.start();
      try {
        await until('five archived', () => daemon.db.fileCounts.counts().archived === 5, 60_000);
      } finally {
        await daemon.stop();
      }
      const year = String(new Date().getFullYear());
      expect(await filesUnder(join(world.dir, 'processed'))).toEqual(
        [
          `${year}/ACME GmbH/R-1.pdf`,
          `${year}/ACME GmbH/R-1 (2).pdf`,
          `${year}/_.._.._.._tmp_owned/_CON.pdf`,
          `${year}/a_b_.._/_none.pdf`,
          `${year}/no supplier/R-9.pdf`,
        ].sort(),
      );
      const results = (await filesUnder(join(world.dir, 'results'))).filter((f) => !f.startsWith('daily-'));
      expect(results).toEqual(
        [
          'ACME GmbH/R-1 Invoice',
          'ACME GmbH/R-1 Invoice (2)',
          '_.._.._.._tmp_owned/_CON Invoice',
          'a_b_.._/_none Invoice',
          '_none/R-9 Invoice',
        ]
          .flatMap((b) => [`${b}.json`, `${b}.fields.csv`, `${b}.lines.csv`])
          .sort(),
      );
      // Each result set is its own document's, and its JSON says where the original went.
      const first = JSON.parse(
        await readFile(join(world.dir, 'results', 'ACME GmbH', 'R-1 Invoice.json'), 'utf8'),
      );
      const second = JSON.parse(
        await readFile(join(world.dir, 'results', 'ACME GmbH', 'R-1 Invoice (2).json'), 'utf8'),
      );
      expect(first.document.document_id).not.toBe(second.document.document_id);
      expect([first.archived_to, second.archived_to].sort()).toEqual(
        [
          join(world.dir, 'processed', year, 'ACME GmbH', 'R-1.pdf'),
          join(world.dir, 'processed', year, 'ACME GmbH', 'R-1 (2).pdf'),
        ].sort(),
      );
      // Nothing was written beside the configured folders.
      expect((await readdir(world.dir)).sort()).toEqual([
        'docex-sync.yaml',
        'failed',
        'inbox',
        'processed',
        'results',
        'state',
      ]);
      expect(existsSync('/tmp/owned')).toBe(false);
    },
  );

  it('a pattern with a mistake is refused when the config is read, naming the key', async () => {
    world = await makeWorld({ watchYaml: "    archive_name: '{yyyy}/../{nme}'" });
    expect(() => world!.config()).toThrow(/watch\[0\]\.archive_name: "\.\." is not a folder name/);
  });
});
