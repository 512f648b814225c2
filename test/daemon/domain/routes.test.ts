/**
 * Routing by subfolder, end to end against the emulator: one folder per supplier or branch, each
 * sent with its own template and metadata; a file in a subfolder no route maps is held (never sent
 * with a guessed template) until a reloaded config maps it.
 */
import { mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createNodeClient } from '@docex/shared/node';
import { checkConfig } from '../../../daemon/src/app/preflight.ts';
import { statusSnapshot } from '../../../daemon/src/status/read-model.ts';
import { cliStatus, renderStatus } from '../../../daemon/src/status/report.ts';
import { invoice, makeWorld, SECRET, until, type World } from '../helpers.ts';

let world: World | undefined;
afterEach(async () => {
  await world?.cleanup();
  world = undefined;
});

async function routedWorld() {
  // A second template for supplier B; the watch's own template (world.templateId) serves supplier A
  // by route and the files at the top.
  const base = await makeWorld();
  const client = createNodeClient({ baseUrl: base.emulator.url, apiKey: SECRET });
  const folder = await client.createFolder({ name: 'Branches' });
  const other = await client.createTemplate({ folder_id: folder.id, name: 'Supplier B invoices' });
  await client.createField({
    template_id: other.id,
    name: 'Invoice number',
    type: 'General fields',
    format: 'invoice_number',
    position: 1,
  });
  const routes = (extra = '') =>
    [
      '    recursive: true',
      '    routes:',
      `      - { match: 'Supplier A', template_id: ${base.templateId}, metadata: '{"supplier":"A"}' }`,
      `      - { match: 'Supplier B', name: 'B', template_id: ${other.id}, metadata: '{"supplier":"B"}' }`,
      `      - { match: 'Branch-*', name: 'branches', template_id: ${other.id}, metadata: '{"branch":true}' }`,
      extra,
    ].join('\n');
  const config = await readFile(base.configFile, 'utf8');
  await writeFile(base.configFile, `${config}${routes()}\n`);
  return { world: base, other: other.id, folder: folder.id, config, routes };
}

async function resultOf(world: World, name: string) {
  const files = await readdir(join(world.dir, 'results'));
  const json = files.find((f) => f.startsWith(`${name}.doc-`) && f.endsWith('.json'));
  if (!json) throw new Error(`no result for ${name}: ${files.join(', ')}`);
  return JSON.parse(await readFile(join(world.dir, 'results', json), 'utf8')) as {
    document: { document_id: number; template_id: number };
  };
}

describe('routing by subfolder', () => {
  it(
    'three subfolders go with their own template and metadata; the unmapped one is held, not sent',
    { timeout: 90_000 },
    async () => {
      const setup = await routedWorld();
      world = setup.world;
      const inbox = join(world.dir, 'inbox');
      const drop = async (rel: string, n: string) => {
        await mkdir(join(inbox, rel, '..'), { recursive: true });
        await writeFile(join(inbox, rel), invoice(n));
      };
      await drop('Supplier A/a.pdf', 'A-1');
      await drop('Supplier B/b.pdf', 'B-1');
      await drop('Branch-North/2026/c.pdf', 'C-1'); // a glob, and a folder below the mapped one
      await drop('Misc/m.pdf', 'M-1');
      await drop('top.pdf', 'T-1');
      const daemon = await world.start();
      try {
        await until(
          'four archived and one held',
          () => daemon.db.fileCounts.counts().archived === 4 && daemon.db.fileCounts.counts().held === 1,
          30_000,
        );
        const a = await resultOf(world, 'a');
        const b = await resultOf(world, 'b');
        const c = await resultOf(world, 'c');
        const top = await resultOf(world, 'top');
        expect([a, b, c, top].map((r) => r.document.template_id)).toEqual([
          world.templateId,
          setup.other,
          setup.other,
          world.templateId,
        ]);
        // What each upload sent, as the service stored it (the result JSON holds the task's answer, not the metadata).
        const service = createNodeClient({ baseUrl: world.emulator.url, apiKey: SECRET });
        const stored = await Promise.all(
          [a, b, c, top].map((r) => service.fetchDocumentData({ document_id: r.document.document_id })),
        );
        expect(stored.map((d) => d.metadata)).toEqual([
          '{"supplier":"A"}',
          '{"supplier":"B"}',
          '{"branch":true}',
          null,
        ]);
        // Held: still where it was dropped, never uploaded, with a reason a person can act on.
        expect(await readFile(join(inbox, 'Misc', 'm.pdf'), 'utf8')).toBe(invoice('M-1'));
        const [held] = daemon.db.files.inState('held');
        expect(held!.reason).toBe(
          'subfolder "Misc" is mapped by no route (routes: Supplier A, B, branches); add a route for it to the config, or move the file into a mapped subfolder',
        );
        expect(world.emulator.stats().requestsByOperation.upload_file).toBe(4);

        // Rescans see the held file and leave it alone (no second row).
        const rescans = world.logs.filter((l) => l.includes('"rescan"')).length;
        await until(
          'two more rescans',
          () => world!.logs.filter((l) => l.includes('"rescan"')).length >= rescans + 2,
        );
        expect(
          daemon.db.db.prepare(`SELECT COUNT(*) FROM files WHERE rel = 'Misc/m.pdf'`).pluck().get(),
        ).toBe(1);

        // Counts per route, on the page's data and in `status`.
        const snapshot = statusSnapshot({ db: daemon.db, config: world.config() });
        const routes = snapshot.watches[0]!.routes.map((r) => [r.route, r.template_id, r.files.archived]);
        expect(routes).toEqual([
          ['Supplier A', world.templateId, 1],
          ['B', setup.other, 1],
          ['branches', setup.other, 1],
          [null, world.templateId, 1],
        ]);
        expect(snapshot.held.total).toBe(1);
        expect(snapshot.held.files[0]!.file).toBe(join(inbox, 'Misc', 'm.pdf'));
      } finally {
        await daemon.stop();
      }
      const text = renderStatus(cliStatus(world.config()));
      expect(text).toContain(`held ${join(inbox, 'Misc', 'm.pdf')}: subfolder "Misc" is mapped by no route`);
      expect(text).toContain(`route B → template ${setup.other}: archived 1`);
      expect(text).toContain(`route (top folder) → template ${world.templateId}: archived 1`);

      // The operator maps Misc and restarts (a reload does the same): the held file goes through.
      await writeFile(
        world.configFile,
        `${setup.config}${setup.routes(`      - { match: Misc, template_id: ${setup.other} }`)}\n`,
      );
      const again = await world.start();
      try {
        await until('the held file archived', () => again.db.fileCounts.counts().archived === 5, 30_000);
        expect(again.db.fileCounts.counts().held).toBe(0);
        expect((await resultOf(world, 'm')).document.template_id).toBe(setup.other);
      } finally {
        await again.stop();
      }
    },
  );

  it(
    "a route without metadata sends the watch's; one with its own sends that (read back from the service's documents)",
    { timeout: 90_000 },
    async () => {
      // Issue #41: Supplier B's and Petty cash's documents were stored with no metadata at all.
      const setup = await routedWorld();
      world = setup.world;
      await writeFile(
        world.configFile,
        [
          setup.config.replace(
            '    stable_ms: 200',
            `    stable_ms: 200\n    metadata: '{"source":"share"}'`,
          ),
          '    recursive: true',
          '    routes:',
          `      - { match: 'Supplier A', template_id: ${world.templateId}, metadata: '{"supplier":"A"}' }`,
          `      - { match: 'Supplier B', template_id: ${setup.other} }`,
          `      - { match: 'Petty cash', template_id: ${world.templateId}, review: {} }`,
          '',
        ].join('\n'),
      );
      const inbox = join(world.dir, 'inbox');
      const files = ['top.pdf', 'Supplier A/a.pdf', 'Supplier B/b.pdf', 'Petty cash/p.pdf'];
      for (const [i, rel] of files.entries()) {
        await mkdir(join(inbox, rel, '..'), { recursive: true });
        await writeFile(join(inbox, rel), invoice(`M-${i}`));
      }
      const daemon = await world.start();
      let documents: Map<string, number>;
      try {
        await until(
          'all four archived',
          () => daemon.db.fileCounts.counts().archived === files.length,
          30_000,
        );
        documents = new Map(daemon.db.files.inState('archived').map((r) => [r.rel, r.document_id!]));
      } finally {
        await daemon.stop();
      }
      const client = createNodeClient({ baseUrl: world.emulator.url, apiKey: SECRET });
      const stored: Record<string, unknown> = {};
      for (const rel of files)
        stored[rel] = (
          (await client.fetchDocumentData({ document_id: documents.get(rel)! })) as { metadata?: unknown }
        ).metadata;
      expect(stored).toEqual({
        'top.pdf': '{"source":"share"}',
        'Supplier A/a.pdf': '{"supplier":"A"}',
        'Supplier B/b.pdf': '{"source":"share"}',
        'Petty cash/p.pdf': '{"source":"share"}',
      });
    },
  );

  it('check verifies every route against the service, naming the route', async () => {
    const setup = await routedWorld();
    world = setup.world;
    await writeFile(
      world.configFile,
      `${setup.config}${setup.routes("      - { match: 'Old supplier', template_id: 99999 }")}\n`,
    );
    const client = createNodeClient({ baseUrl: world.emulator.url, apiKey: SECRET });
    const report = await checkConfig(world.config(), client, world.emulator.url);
    expect(report.problems).toEqual([
      'watch[0].routes[3] ("Old supplier").template_id: template 99999 does not exist for this API key',
    ]);
  });

  it('a route without a template or folder, and routes on a flat watch, are refused by name', async () => {
    const setup = await routedWorld();
    world = setup.world;
    await writeFile(world.configFile, `${setup.config}    routes:\n      - { match: 'Supplier C' }\n`);
    expect(() => world!.config()).toThrow(
      /watch\[0\]\.routes: routes map subfolders; set recursive: true[\s\S]*watch\[0\]\.routes\[0\]: give template_id or folder_id for "Supplier C"/,
    );
  });
});
