/**
 * Per-field review rules in docex-sync's config: `docex-sync check` reads them with the shared
 * reader (shared/src/core/review-rules.ts) and says each mistake with the file, line and key, what
 * is wrong and what to do, as every other config mistake (config-messages.test.ts).
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../daemon/src/config/config.ts';
import { reviewRulesFor } from '../../../daemon/src/outputs/review.ts';
import { syncInProcess } from '../helpers.ts';

let dir: string;
beforeAll(async () => void (dir = await mkdtemp(join(tmpdir(), 'docex-review-rules-'))));
afterAll(async () => rm(dir, { recursive: true, force: true }));

const config = (review: string) => `state_db: ./state.db
watch:
  - path: ./in
    template_id: 3
    output: ./out
    processed_dir: ./done
    failed_dir: ./failed
    review_dir: ./review
    review:
${review}`;

async function write(text: string) {
  const file = join(dir, 'docex-sync.yaml');
  await writeFile(file, text);
  return file;
}

async function check(review: string) {
  const file = await write(config(review));
  const run = await syncInProcess(['check', '--config', file]);
  return { ...run, stderr: run.stderr.replaceAll(file, 'docex-sync.yaml') };
}

describe('review.fields in the config', () => {
  it('reads a default with per-field overrides, exemptions, required and optional fields', async () => {
    const file = await write(
      config(`      min_confidence: 0.8
      required_fields: [Supplier]
      fields:
        VAT: { optional: true }
        Notes: { min_confidence: 0 }
        Total: { min_confidence: 0.95, required: true }
`),
    );
    expect(reviewRulesFor(loadConfig(file).watch[0]!, null)).toEqual({
      minConfidence: 0.8,
      requiredFields: ['Supplier'],
      fields: {
        VAT: { optional: true },
        Notes: { minConfidence: 0 },
        Total: { minConfidence: 0.95, required: true },
      },
    });
  });

  it('a misspelt key and a value out of range are named with their line and what to do', async () => {
    const run = await check(`      min_confidence: 0.8
      fields:
        Total: { min_confidance: 0.95 }
        Notes: { min_confidence: 95 }
`);
    expect(run.code).toBe(2);
    expect(run.stderr).toBe(`docex-sync check: docex-sync.yaml: invalid config
  docex-sync.yaml:12 watch[0].review.fields.Total.min_confidance: unknown key (did you mean "min_confidence"?)
  docex-sync.yaml:13 watch[0].review.fields.Notes.min_confidence: must be a number (from 0 to 1), e.g. 0.8, not 95
`);
  });

  it('contradictions: optional but required, required and optional, a rule that says nothing', async () => {
    const run = await check(`      required_fields: [VAT]
      fields:
        VAT: { optional: true }
        Supplier: { required: true, optional: true }
        Notes: {}
`);
    expect(run.code).toBe(2);
    expect(run.stderr).toBe(`docex-sync check: docex-sync.yaml: invalid config
  docex-sync.yaml:12 watch[0].review.fields.VAT.optional: VAT is also in required_fields: a field is either required or optional; remove one of the two
  docex-sync.yaml:13 watch[0].review.fields.Supplier: is both required and optional: keep one (required: it must have a value; optional: it may be missing)
  docex-sync.yaml:14 watch[0].review.fields.Notes: gives no rule: add min_confidence (0 to 1; 0: never held for its confidence), required: true or optional: true, or remove Notes
`);
  });
});
