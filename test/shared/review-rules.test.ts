/**
 * Per-field review rules (shared/src/core/review-rules.ts, the one reader docex-sync and the n8n
 * node share, and review.ts's evaluation): a default minimum with a field's own minimum or
 * exemption, required and optional fields, and the mistakes a person can make writing them, each
 * said with its key and what to do. Pure units; the same rules through the daemon and the node:
 * test/n8n/review-parity.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { readReviewRules, reviewReasons, type ReviewRuleTerms } from '@docex/shared';

/** As the emulator answers: a field found in the text at 0.95, one it could not find empty at 0.1. */
const field = (value: string, confidence = value === '' ? 0.1 : 0.95) => ({ value, confidence });
const scanWithoutVat = {
  General_fields: {
    Supplier: field('ACME GmbH'),
    'Invoice number': field('R-1001'),
    Total: field('119,00', 0.9),
    VAT: field(''),
  },
};

/** The rules read from settings as written in a config's `review:` (the reader must accept them). */
function rules(settings: unknown) {
  const read = readReviewRules(settings);
  expect(read.problems).toEqual([]);
  return read.rules!;
}
const messages = (settings: unknown, data: unknown = scanWithoutVat) =>
  reviewReasons(data as Record<string, unknown>, rules(settings)).map((r) => r.message);

describe('per-field review rules', () => {
  it('a scan without VAT is held by the default minimum, and not once VAT is exempt or optional', () => {
    expect(messages({ min_confidence: 0.8 })).toEqual(['VAT: confidence 0.1 is below 0.8']);
    expect(messages({ min_confidence: 0.8, fields: { VAT: { min_confidence: 0 } } })).toEqual([]);
    expect(messages({ min_confidence: 0.8, fields: { vat: { optional: true } } })).toEqual([]);
  });

  it('an optional field that has a value is still checked; an exempt one never', () => {
    const unsureVat = { General_fields: { ...scanWithoutVat.General_fields, VAT: field('19,00', 0.3) } };
    expect(messages({ min_confidence: 0.8, fields: { VAT: { optional: true } } }, unsureVat)).toEqual([
      'VAT: confidence 0.3 is below 0.8',
    ]);
    expect(messages({ min_confidence: 0.8, fields: { VAT: { min_confidence: 0 } } }, unsureVat)).toEqual([]);
  });

  it("Total below its own threshold is held with that rule named; the others keep the default's", () => {
    const reasons = reviewReasons(
      scanWithoutVat,
      rules({ min_confidence: 0.5, fields: { Total: { min_confidence: 0.95 } } }),
    );
    expect(reasons).toEqual([
      {
        rule: 'minConfidence',
        field: 'Total',
        value: '119,00',
        found: 0.9,
        threshold: 0.95,
        message: "Total: confidence 0.9 is below 0.95, Total's own minimum",
      },
      {
        rule: 'minConfidence',
        field: 'VAT',
        value: '',
        found: 0.1,
        threshold: 0.5,
        message: 'VAT: confidence 0.1 is below 0.5',
      },
    ]);
    // A field's own minimum applies without any default: only Total is looked at.
    expect(messages({ fields: { Total: { min_confidence: 0.95 } } })).toEqual([
      "Total: confidence 0.9 is below 0.95, Total's own minimum",
    ]);
  });

  it('a required field missing or empty holds, with required_fields or the field marked required', () => {
    const receipt = { General_fields: { Total: field('9,90'), Supplier: field('') } };
    expect(messages({ fields: { 'Invoice number': { required: true } } }, receipt)).toEqual([
      'Invoice number is missing',
    ]);
    expect(
      messages(
        {
          required_fields: ['Supplier'],
          fields: { supplier: { required: true }, Total: { required: true } },
        },
        receipt,
      ),
    ).toEqual(['Supplier is empty']);
    // Required and low in confidence: both are said.
    expect(messages({ min_confidence: 0.8, fields: { Supplier: { required: true } } }, receipt)).toEqual([
      'Supplier: confidence 0.1 is below 0.8',
      'Supplier is empty',
    ]);
  });

  it("settings without any rule read as none (a route's `review: {}`)", () => {
    expect(readReviewRules({})).toEqual({ rules: undefined, problems: [] });
    expect(readReviewRules({ fraud: { not_clean: false }, fields: {} })).toEqual({
      rules: undefined,
      problems: [],
    });
  });
});

describe('mistakes in the rules, each with its key and what to do', () => {
  const problems = (settings: unknown, terms?: ReviewRuleTerms) => readReviewRules(settings, terms).problems;

  it('an unknown key names the keys that are allowed there', () => {
    expect(problems({ fields: { VAT: { min_confidance: 0 } }, min_confidance: 0.8 })).toEqual([
      'fields.VAT.min_confidance: unknown key; the keys here are min_confidence, required, optional',
      'min_confidance: unknown key; the keys here are min_confidence, required_fields, fields, fraud, line_total',
    ]);
  });

  it('values out of range or of the wrong kind say what they must be', () => {
    expect(
      problems({ min_confidence: 80, fields: { Total: { min_confidence: '0.9', required: 'yes' } } }),
    ).toEqual([
      'min_confidence: must be a number from 0 to 1, e.g. 0.8, not 80',
      'fields.Total.min_confidence: must be a number from 0 to 1, e.g. 0.8, not "0.9"',
      'fields.Total.required: must be true or false, not "yes"',
    ]);
  });

  it('contradictions: required and optional, optional but in required_fields, a rule that says nothing, two names for one field', () => {
    expect(
      problems({
        required_fields: ['VAT'],
        fields: {
          VAT: { optional: true },
          Total: { required: true, optional: true },
          Notes: {},
          total: { required: true },
        },
      }),
    ).toEqual([
      'fields.VAT.optional: VAT is also in required_fields: a field is either required or optional; remove one of the two',
      'fields.Total: is both required and optional: keep one (required: it must have a value; optional: it may be missing)',
      'fields.Notes: gives no rule: add min_confidence (0 to 1; 0: never held for its confidence), required: true or optional: true, or remove Notes',
      'fields.total: names the same field as fields.Total (names are matched without case): merge the two',
    ]);
  });

  it("a program's own terms name its keys (the n8n node's parameters)", () => {
    const terms: ReviewRuleTerms = {
      key: (path) => (path[0] === 'fields' ? `Field Rules (${String(path[1])})` : 'Required Fields'),
    };
    expect(problems({ required_fields: ['VAT'], fields: { VAT: { optional: true } } }, terms)).toEqual([
      'Field Rules (VAT): VAT is also in Required Fields: a field is either required or optional; remove one of the two',
    ]);
  });
});
