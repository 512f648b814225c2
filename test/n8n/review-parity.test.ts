/**
 * One table of review rules and documents, run through both readers' users: docex-sync (its config
 * file read by loadConfig, then the evaluation the pipeline calls, decideReview) and the n8n node's
 * Route for Review on Get Data (in n8n-core's real ExecuteContext, its parameters expressing the
 * same rules). Both must give the same verdict with the same reasons, and the one the table says.
 * The documents are the emulator's (docs/emulator.md): a field found in the text at 0.95; one not
 * found at 0.1, "" for text and 0 for a number.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { INodeParameters } from 'n8n-workflow';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import YAML from 'yaml';
import type { DocexClient, DocumentData, ReviewReason, TaskResult } from '@docex/shared';
import { createNodeClient } from '@docex/shared/node';
import { loadConfig } from '../../daemon/src/config/config.ts';
import type { FileRow } from '../../daemon/src/domain/lifecycle.ts';
import { decideReview, heldReview } from '../../daemon/src/outputs/review.ts';
import { startEmulator, type Emulator } from '../../emulator/index.ts';
import { runDocexOutputs, type Credentials } from './harness.ts';

/** A review section as docex-sync's config writes it. */
interface Review {
  min_confidence?: number;
  required_fields?: string[];
  fields?: Record<string, { min_confidence?: number; required?: boolean; optional?: boolean }>;
  fraud?: { not_clean?: boolean; max_score?: number };
}

const invoice = (more = '') =>
  `Supplier: ACME GmbH\nInvoice number: R-1001\nTotal: 119,00\nVAT: 19,00\nPO number: 77\n${more}`;
const DOCUMENTS = {
  full: invoice(),
  'scan without VAT': invoice().replace('VAT: 19,00\n', ''),
  'scan without PO number': invoice().replace('PO number: 77\n', ''),
  receipt: 'Total: 9,90\n',
  'fraud suspect': invoice('Fraud: high\n'),
};

const CASES: Array<{ says: string; review: Review; document: keyof typeof DOCUMENTS; held: string[] }> = [
  {
    says: 'the default minimum holds a scan without VAT (the service fills it in at 0.1)',
    review: { min_confidence: 0.8 },
    document: 'scan without VAT',
    held: ['VAT: confidence 0.1 is below 0.8'],
  },
  {
    says: 'VAT exempt: the scan without it passes',
    review: { min_confidence: 0.8, fields: { VAT: { min_confidence: 0 } } },
    document: 'scan without VAT',
    held: [],
  },
  {
    says: 'PO number optional: a scan without it passes',
    review: { min_confidence: 0.8, fields: { 'PO number': { optional: true } } },
    document: 'scan without PO number',
    held: [],
  },
  {
    says: "Total below its own minimum is held with that rule named, the others pass the default's",
    review: { min_confidence: 0.8, fields: { Total: { min_confidence: 0.96 } } },
    document: 'full',
    held: ["Total: confidence 0.95 is below 0.96, Total's own minimum"],
  },
  {
    says: 'required fields missing from a receipt hold it, its confidences exempt',
    review: {
      required_fields: ['Total'],
      fields: { Supplier: { required: true }, 'Invoice number': { required: true } },
    },
    document: 'receipt',
    held: ['Supplier is empty', 'Invoice number is empty'],
  },
  {
    says: 'a receipt passes rules that exempt what receipts lack',
    review: {
      min_confidence: 0.8,
      fields: {
        Supplier: { min_confidence: 0 },
        'Invoice number': { min_confidence: 0 },
        VAT: { min_confidence: 0 },
        'PO number': { optional: true },
      },
    },
    document: 'receipt',
    held: [],
  },
  {
    says: 'per-field rules beside the fraud rules',
    review: {
      min_confidence: 0.8,
      fields: { VAT: { min_confidence: 0 } },
      fraud: { not_clean: true, max_score: 0.9 },
    },
    document: 'fraud suspect',
    held: ['fraud verdict is "HIGH_RISK", not a clean one', 'fraud score 0.95 is above 0.9'],
  },
];

/** The same rules as the node's Route for Review parameters. */
function nodeParameters(review: Review): INodeParameters {
  const rules = Object.entries(review.fields ?? {}).flatMap(([field, r]) => [
    ...(r.min_confidence !== undefined
      ? [{ field, kind: 'minConfidence', minConfidence: r.min_confidence }]
      : []),
    ...(r.required ? [{ field, kind: 'required' }] : []),
    ...(r.optional ? [{ field, kind: 'optional' }] : []),
  ]);
  return {
    routeForReview: true,
    reviewMinConfidence: review.min_confidence ?? 0,
    reviewRequiredFields: (review.required_fields ?? []).join(', '),
    reviewFieldRules: { rule: rules },
    reviewFraud: review.fraud?.not_clean === true,
    reviewMore: review.fraud?.max_score === undefined ? {} : { maxFraudScore: review.fraud.max_score },
  };
}

let emulator: Emulator;
let credentials: Credentials;
let client: DocexClient;
let dir: string;
const uploaded = new Map<string, { documentId: number; data: DocumentData; task: TaskResult }>();

beforeAll(async () => {
  emulator = await startEmulator({ port: 0, taskDelayMs: 20 });
  credentials = { baseUrl: emulator.url, apiKey: emulator.keys[0]! };
  client = createNodeClient(credentials);
  dir = await mkdtemp(join(tmpdir(), 'docex-review-parity-'));
  const folder = await client.createFolder({ name: 'AP' });
  const template = await client.createTemplate({
    folder_id: folder.id,
    name: 'Invoice',
    number_locale: 'EU',
  });
  const fields = [
    ['Supplier', 'text'],
    ['Invoice number', 'invoice_number'],
    ['Total', 'total_price'],
    ['VAT', 'total_price'],
    ['PO number', 'text'],
  ] as const;
  for (const [i, [name, format]] of fields.entries())
    await client.createField({
      template_id: template.id,
      name,
      type: 'General fields',
      format,
      position: i + 1,
    });
  for (const [name, text] of Object.entries(DOCUMENTS)) {
    const { tasks } = await client.uploadAndWait(
      {
        files: [{ data: new TextEncoder().encode(text), fileName: `${name}.txt` }],
        template_id: template.id,
      },
      { intervalMs: 20 },
    );
    const task = tasks[0]! as TaskResult;
    const documentId = task.document_id!;
    uploaded.set(name, {
      documentId,
      task,
      data: await client.fetchDocumentData({ document_id: documentId }),
    });
  }
}, 60_000);
afterAll(async () => {
  await emulator?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const said = (reasons: ReviewReason[]) =>
  reasons.map(({ rule, field, message }) => ({ rule, field, message }));

/** docex-sync's verdict: the rules from a config file, evaluated as the pipeline does. */
async function daemonVerdict(review: Review, document: string): Promise<ReviewReason[]> {
  const file = join(dir, `${document.replaceAll(' ', '-')}.yaml`);
  const config = {
    state_db: './state.db',
    watch: [
      {
        path: './in',
        template_id: 1,
        output: './out',
        failed_dir: './failed',
        on_success: 'keep',
        review_dir: './review',
        review,
      },
    ],
  };
  await writeFile(file, YAML.stringify(config));
  const watch = loadConfig(file).watch[0]!;
  const { data, task } = uploaded.get(document)!;
  const row = {
    id: 1,
    path: join(dir, 'in', 'x.txt'),
    rel: 'x.txt',
    route: null,
    review: null,
  } as unknown as FileRow;
  const decided = await decideReview(watch, row, data, task);
  return decided ? heldReview({ review: decided.review }).reasons : [];
}

/** The node's verdict: Route for Review on Get Data, the reasons of the item on "Needs Review". */
async function nodeVerdict(review: Review, document: string): Promise<ReviewReason[]> {
  const { documentId } = uploaded.get(document)!;
  const [done, needsReview] = await runDocexOutputs(
    { resource: 'document', operation: 'getData', documentId, ...nodeParameters(review) },
    { credentials },
  );
  expect(done!.length + needsReview!.length).toBe(1);
  return needsReview!.length ? (needsReview![0]!.json.review_reasons as unknown as ReviewReason[]) : [];
}

describe('the same review rules, the same verdict in docex-sync and in the n8n node', () => {
  for (const { says, review, document, held } of CASES) {
    it(`${says} (${document})`, async () => {
      const [daemon, node] = await Promise.all([
        daemonVerdict(review, document),
        nodeVerdict(review, document),
      ]);
      expect(daemon.map((r) => r.message)).toEqual(held);
      expect(said(node)).toEqual(said(daemon));
    });
  }
});

describe("mistakes in the node's rules", () => {
  it('are said with the parameter and what to do, before anything is read', async () => {
    const { documentId } = uploaded.get('full')!;
    const run = (parameters: INodeParameters) =>
      runDocexOutputs(
        { resource: 'document', operation: 'getData', documentId, ...parameters },
        { credentials },
      );
    await expect(
      run(
        nodeParameters({
          required_fields: ['VAT'],
          fields: { VAT: { optional: true }, Total: { required: true, optional: true } },
        }),
      ),
    ).rejects.toThrow(
      'Route for Review: Field Rules (VAT): VAT is also in Required Fields: a field is either required or optional; remove one of the two; ' +
        'Field Rules (Total): is both required and optional: keep one (required: it must have a value; optional: it may be missing)',
    );
    await expect(
      run({ ...nodeParameters({}), reviewFieldRules: { rule: [{ field: ' ', kind: 'required' }] } }),
    ).rejects.toThrow(
      "Route for Review: Field Rules: a rule has no field name: type the general field's name, or remove the rule",
    );
  });
});
