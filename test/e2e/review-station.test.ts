/**
 * The review station in a real browser (Debian's chromium driven by playwright-core), as an
 * accountant works in it, against a running daemon and the emulator: held -> open -> see the PDF and
 * its values -> correct the total -> approve: results, daily CSV and review CSV carry the corrected
 * total, the service's value is kept, an audit row says who; reject -> the failed folder with the
 * reason; Approve all asks first and leaves the fraud-flagged document out. The counts on the status
 * page are checked at each step, and each step is a screenshot in test-output/review-station/.
 */
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseCsv } from '../../daemon/src/outputs/results.ts';
import { AuditTrail } from '../../daemon/src/store/audit.ts';
import { until, type World } from '../daemon/helpers.ts';
import { reviewWorld, tree } from '../daemon/review-helpers.ts';
import { launchChromium, type BrowserContext, type Page } from './browser.ts';
import { repo } from './pack.ts';

const SHOTS = join(repo, 'test-output', 'review-station');

let world: World | undefined;
let browser: BrowserContext | undefined;

beforeAll(async () => {
  await rm(SHOTS, { recursive: true, force: true });
  await mkdir(SHOTS, { recursive: true });
  browser = await launchChromium({ width: 1400, height: 1000 });
});

afterAll(async () => {
  await browser?.close();
  await world?.cleanup();
});

/**
 * A real one-page PDF (catalog, page, font, content stream, cross-reference table) whose text the
 * emulator reads (`Label: value` runs): a browser's viewer can show it.
 */
function invoicePdf(lines: string[]): Buffer {
  const content = `BT /F1 14 Tf 60 780 Td 18 TL\n${lines.map((l) => `(${l.replace(/[()\\]/g, '\\$&')}) Tj T*`).join('\n')}\nET`;
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>',
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>',
    `<< /Length ${content.length} >>\nstream\n${content}\nendstream`,
  ];
  let pdf = '%PDF-1.4\n';
  const offsets: number[] = [];
  objects.forEach((body, i) => {
    offsets.push(pdf.length);
    pdf += `${i + 1} 0 obj\n${body}\nendobj\n`;
  });
  const xref = pdf.length;
  pdf += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n \n`).join('')}`;
  pdf += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(pdf, 'latin1');
}

/** Held by the watch's min_confidence: no Total in the text (the service's Total has confidence 0.1). */
const LOW = (n: string) => `Invoice number: ${n}\nWidget | 4,00\n`;

/**
 * What Chromium's PDF viewer (its extension frame inside the page's iframe) has drawn: the number of
 * pages once it has painted the first page's thumbnail (the plugin renders it from the document: not
 * blank), else 0. Headless Chromium runs the same viewer; a screenshot taken before it painted shows
 * its empty grey, so the steps that show the PDF wait for this first.
 */
const PDF_PAINTED = `(() => {
  const viewer = document.querySelector('pdf-viewer')?.shadowRoot;
  const pages = viewer?.querySelector('viewer-toolbar')?.docLength ?? 0;
  const bar = viewer?.querySelector('viewer-pdf-sidenav')?.shadowRoot
    ?.querySelector('viewer-thumbnail-bar')?.shadowRoot;
  const canvas = bar?.querySelector('viewer-thumbnail')?.shadowRoot?.querySelector('canvas');
  if (!pages || !canvas || !canvas.width) return 0;
  const { data } = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height);
  for (let i = 0; i < data.length; i += 4) if (data[i + 3] > 0 && data[i] < 230) return pages; // ink on white
  return 0;
})()`;

async function pdfShown(page: Page): Promise<number> {
  return until(
    "the PDF drawn by the browser's viewer",
    async () => {
      const viewer = page.frames().find((f) => f.url().startsWith('chrome-extension://'));
      return (await viewer?.evaluate<number>(PDF_PAINTED).catch(() => 0)) || undefined;
    },
    30_000,
  ).catch((error: Error) => {
    throw new Error(
      `${error.message}; frames: ${page
        .frames()
        .map((f) => f.url())
        .join(', ')}`,
    );
  });
}

async function shot(page: Page, name: string) {
  const path = join(SHOTS, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  console.log(`screenshot: ${path}`);
}

describe('the review station in Chromium', () => {
  it('held -> open -> see the PDF and values -> correct the total -> approve; reject; Approve all asks and skips the fraud document', async () => {
    world = await reviewWorld({ extra: 'http: { port: 0 }\n' });
    const { dir } = world;
    await mkdir(join(dir, 'inbox', 'verdict'), { recursive: true });
    await writeFile(
      join(dir, 'inbox', 'invoice.pdf'),
      invoicePdf(['ACME GmbH', 'Invoice number: P-1001', 'Widget | 4,00', 'Gadget | 6,00']),
    );
    await writeFile(join(dir, 'inbox', 'wrong.txt'), LOW('W-1'));
    await writeFile(join(dir, 'inbox', 'clean.txt'), LOW('C-1'));
    await writeFile(
      join(dir, 'inbox', 'verdict', 'risky.txt'),
      `Invoice number: F-1\nTotal: 10,00\nFraud: high\n`,
    );
    const daemon = await world.start();
    const port = (daemon.http!.address() as AddressInfo).port;
    await until('four held', () => daemon.db.fileCounts.counts().review === 4, 60_000);
    const idOf = (name: string) =>
      daemon.db.fileCounts.inReview(100).find((r) => r.path.endsWith(`/${name}`))!.id;
    const [pdfId, wrongId, cleanId, riskyId] = ['invoice.pdf', 'wrong.txt', 'clean.txt', 'risky.txt'].map(
      idOf,
    ) as [number, number, number, number];
    const base = `http://127.0.0.1:${port}/`;
    const page = await browser!.newPage();
    page.setDefaultTimeout(30_000);
    const errors: string[] = [];
    page.on('console', (m) => errors.push(m.text()));
    const text = (testid: string) => page.locator(`[data-testid="${testid}"]`).first().textContent();
    const counts = async () => {
      await page.goto(base);
      return {
        review: await text('review-total'),
        held: await text('held-total'),
        failed: await text('failed-total'),
      };
    };

    // 1. The status page: four wait for review.
    expect(await counts()).toEqual({ review: '4', held: '0', failed: '0' });
    await shot(page, '01-status-page-four-waiting');

    // 2. Open the review station: the oldest first; j and k move through the queue.
    await page.locator('[data-testid="open-review"]').click();
    await page.waitForURL((u) => u.pathname === '/review');
    expect(await text('position')).toMatch(/^1 of 4$/);
    await page.locator('h1').click();
    await page.locator('body').press('j');
    await until(
      'j shows the second',
      async () => (await text('position').catch(() => '')) === '2 of 4',
      15_000,
    );
    await page.locator('body').press('k');
    await until(
      'k shows the first again',
      async () => (await text('position').catch(() => '')) === '1 of 4',
      15_000,
    );

    // 3. The PDF beside its values: the original framed from the review folder, the doubtful Total marked.
    await page.goto(`${base}review?id=${pdfId}`);
    expect(await page.locator('iframe[data-testid="original"]').count()).toBe(1);
    expect(await page.locator('[data-testid="original"]').first().textContent()).toBe('');
    const served = await page.evaluate<string>(
      `fetch('review/original/${pdfId}').then((r) => r.headers.get('content-type') + ' ' + r.headers.get('content-disposition'))`,
    );
    expect(served).toBe(`application/pdf inline; filename="invoice.pdf"; filename*=UTF-8''invoice.pdf`);
    const total = page.locator('tr[data-field="Total"]');
    expect(await total.locator('[data-testid="field-confidence"]').textContent()).toBe('0.1');
    expect(await total.locator('[data-testid="field-rule"]').textContent()).toContain(
      'minConfidence: Total: confidence 0.1 is below 0.8',
    );
    expect(await page.locator('tr.fired').count()).toBeGreaterThanOrEqual(1);
    expect(await page.locator('[data-testid="line"]').count()).toBe(2);
    const serviceTotal = (await total.locator('[data-testid="field-value"]').textContent())!;
    expect(await pdfShown(page), "the PDF's pages, as the viewer drew them").toBe(1);
    await shot(page, '02-review-pdf-and-values');

    // 4. Correct the total (e), then save: approved with the corrected value.
    await page.locator('[data-testid="who"]').fill('Alice Accountant');
    await page.locator('h1').click(); // out of the name field: the keys act on the page
    await page.locator('body').press('e');
    const input = total.locator('input.edit');
    await input.waitFor({ state: 'visible' });
    await input.fill('12,50');
    await shot(page, '03-correct-the-total');
    await page.locator('[data-testid="save"]').click();
    await until('approved', async () => (await text('note')) === 'approved, corrected: Total', 15_000);
    await until('archived', () => daemon.db.files.get(pdfId)?.state === 'archived', 30_000);
    const results = await tree(join(dir, 'results'));
    const json = JSON.parse(
      await readFile(
        join(
          dir,
          'results',
          results.find((f) => /^invoice\.doc-\d+\.json$/.test(f))!,
        ),
        'utf8',
      ),
    ) as { document: { General_fields: Record<string, Record<string, unknown>> }; corrections: unknown[] };
    expect(json.document.General_fields.Total).toMatchObject({
      value: 12.5,
      confidence: 1,
      service_confidence: 0.1,
    });
    expect(String(json.document.General_fields.Total!.service_value)).toBe(serviceTotal);
    expect(json.corrections).toMatchObject([{ field: 'Total', to: 12.5, by: 'Alice Accountant' }]);
    const daily = parseCsv(
      await readFile(
        join(
          dir,
          'results',
          results.find((f) => f.startsWith('daily-'))!,
        ),
        'utf8',
      ),
      ',',
    );
    expect(daily[1]![daily[0]!.indexOf('Total')]).toBe('12.5');
    const reviewCsv = (await tree(join(dir, 'review'))).find((f) => f.startsWith('review-'))!;
    const decisions = parseCsv(await readFile(join(dir, 'review', reviewCsv), 'utf8'), ',');
    expect(decisions.find((r) => r[4] === 'approved, corrected by Alice Accountant')![11]).toBe(
      `Total: ${serviceTotal} -> 12.5`,
    );
    expect(new AuditTrail(daemon.db.db).since(0).map((r) => [r.action, r.who, r.field, r.new_value])).toEqual(
      [
        ['correct', 'Alice Accountant', 'Total', '12.5'],
        ['approve', 'Alice Accountant', null, 'approved'],
      ],
    );
    expect(await tree(join(dir, 'processed'))).toEqual(['invoice.pdf']);
    expect(await counts()).toEqual({ review: '3', held: '0', failed: '0' });
    await shot(page, '04-status-after-correct-and-approve');

    // 5. Reject (r) with a reason: the failed folder, the reason in its error.json.
    await page.goto(`${base}review?id=${wrongId}`);
    await page.locator('h1').click();
    await page.locator('body').press('r');
    await page.locator('[data-testid="reject-reason"]').fill('not our supplier');
    await shot(page, '05-reject-with-reason');
    await page.locator('[data-testid="reject-confirm"]').click();
    await until(
      'in the failed folder',
      async () => (await tree(join(dir, 'failed'))).includes('wrong.txt.error.json'),
      30_000,
    );
    const report = JSON.parse(await readFile(join(dir, 'failed', 'wrong.txt.error.json'), 'utf8')) as {
      reason: string;
    };
    expect(report.reason).toBe('rejected on review by Alice Accountant: not our supplier');
    expect(await counts()).toEqual({ review: '2', held: '0', failed: '1' });
    await shot(page, '06-status-after-reject');

    // 6. Approve all: the list first, the fraud-flagged one unticked; confirmed, it stays.
    await page.locator('[data-testid="approve-all"]').click();
    await page.waitForURL((u) => u.pathname === '/review');
    const items = page.locator('[data-testid="approve-all-item"]');
    expect(await items.count()).toBe(2);
    const ticked = await page.evaluate<Array<[string, boolean]>>(
      `[...document.querySelectorAll('[data-testid="approve-all-item"]')].map((c) => [c.value, c.checked])`,
    );
    expect(ticked.sort()).toEqual(
      [
        [String(cleanId), true],
        [String(riskyId), false],
      ].sort(),
    );
    expect(await page.locator('[data-testid="fraud-flag"]').count()).toBe(1);
    expect(daemon.db.files.get(cleanId)!.state).toBe('review'); // nothing happened before the confirmation
    await shot(page, '07-approve-all-asks');
    await page.locator('[data-testid="approve-all-confirm"]').click();
    await until('clean archived', () => daemon.db.files.get(cleanId)?.state === 'archived', 30_000);
    expect(daemon.db.files.get(riskyId)!.state).toBe('review');
    expect(await counts()).toEqual({ review: '1', held: '0', failed: '1' });
    await shot(page, '08-status-after-approve-all');
    expect(errors.filter((e) => /refused|error|Content Security Policy/i.test(e))).toEqual([]);
    expect(new AuditTrail(daemon.db.db).since(0).map((r) => [r.action, r.file_id])).toEqual([
      ['correct', pdfId],
      ['approve', pdfId],
      ['reject', wrongId],
      ['approve', cleanId],
    ]);
  });
});
