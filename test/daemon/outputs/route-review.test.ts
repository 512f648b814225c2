/**
 * A route to another template has its own review rules and names, not its watch's (common/
 * route-settings.ts): the receipts of the issue ("Supplier is missing; Invoice number is missing",
 * archived as "no supplier/unknown.txt") against the emulator, end to end through the daemon. The
 * watch's rules still hold its own documents.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createNodeClient } from '@docex/shared/node';
import { makeWorld, SECRET, until, type World } from '../helpers.ts';
import { templateWithField } from '../../support/templates.ts';
import { tree } from '../review-helpers.ts';

let world: World | undefined;
afterEach(async () => {
  await world?.cleanup();
  world = undefined;
});

describe("a route's review rules and names replace its watch's", () => {
  it(
    "a receipt routed to its own template is not held for the invoice rules and is archived under the route's naming",
    { timeout: 120_000 },
    async () => {
      world = await makeWorld();
      const client = createNodeClient({ baseUrl: world.emulator.url, apiKey: SECRET });
      // The watch's invoices have a Supplier; the receipts' template has a Total only.
      await client.createField({
        template_id: world.templateId,
        name: 'Supplier',
        type: 'General fields',
        format: 'text',
        position: 5,
      });
      const folder = await client.createFolder({ name: 'Receipts' });
      const receipts = await templateWithField(client, folder.id, 'Receipt', {
        name: 'Total',
        format: 'total_price',
      });
      expect(receipts.id).not.toBe(world.templateId);
      const yaml = (await readFile(world.configFile, 'utf8')).replace(
        '    rescan_interval_ms: 1000\n',
        [
          '    rescan_interval_ms: 1000',
          '    recursive: true',
          '    review_dir: ./review',
          "    archive_name: '{field:Supplier|no supplier}/{field:Invoice number}{ext}'",
          '    review: { min_confidence: 0.8, required_fields: [Supplier, Invoice number] }',
          '    routes:',
          `      - { match: receipts, template_id: ${receipts.id}, archive_name: 'receipts/{name}{ext}' }`,
          '',
        ].join('\n'),
      );
      await writeFile(world.configFile, yaml);
      const inbox = join(world.dir, 'inbox');
      await mkdir(join(inbox, 'receipts'), { recursive: true });
      await writeFile(join(inbox, 'receipts', 'r-1.txt'), 'Total: 9,90\n');
      // At the top: the watch's own template and rules, which this invoice breaks (no supplier).
      await writeFile(join(inbox, 'inv-1.txt'), 'Invoice number: I-1\nTotal: 10,00\nWidget | 10,00\n');
      const daemon = await world.start();
      await until(
        'both files archived or held for review',
        () => daemon.db.fileCounts.counts().archived + daemon.db.fileCounts.counts().review === 2,
        60_000,
      );
      const receipt = daemon.db.files
        .inState('archived')
        .concat(daemon.db.fileCounts.inReview(10))
        .find((r) => r.route === 'receipts');
      expect(receipt).toMatchObject({ rel: join('receipts', 'r-1.txt'), state: 'archived', review: null });
      expect(await tree(join(world.dir, 'processed'))).toEqual(['receipts/r-1.txt']);
      const [held] = daemon.db.fileCounts.inReview(10);
      expect(held!.rel).toBe('inv-1.txt');
      expect(JSON.parse(held!.review!).reasons.map((r: { message: string }) => r.message)).toEqual([
        'Supplier: confidence 0.1 is below 0.8',
        'Supplier is empty',
      ]);
    },
  );
});
