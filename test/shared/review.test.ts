/**
 * Review rules on extracted documents: the confidence reader over every shape we accept (the API
 * document does not show the inner keys) and each rule of reviewReasons, pure units.
 */
import { describe, expect, test } from 'vitest';
import { parseAmount, readFieldConfidences, reviewReasons, type ReviewRules } from '@docex/shared';

const conf = (data: unknown) =>
  readFieldConfidences(data as Record<string, unknown>).map((f) => [f.name, f.value, f.confidence]);

describe('readFieldConfidences', () => {
  test('{value, confidence} entries (the emulator and the most likely shape)', () => {
    expect(
      conf({
        General_fields: {
          total: { value: '12.50', confidence: 0.93 },
          vendor: { value: 'ACME', confidence: 0.4 },
        },
      }),
    ).toEqual([
      ['total', '12.50', 0.93],
      ['vendor', 'ACME', 0.4],
    ]);
  });

  test.each([
    ['score', { value: 'x', score: 0.7 }],
    ['probability', { value: 'x', probability: 0.7 }],
    ['confidence_score', { value: 'x', confidence_score: 0.7 }],
    ['numeric string', { value: 'x', confidence: '0.7' }],
    ['[value, 0..1]', ['x', 0.7]],
  ])('confidence under %s', (_, entry) => {
    expect(conf({ General_fields: { a: entry } })).toEqual([['a', 'x', 0.7]]);
  });

  test('0..100 scores are read as percentages, all of the document on one scale', () => {
    expect(
      conf({
        General_fields: {
          a: { value: 1, confidence: 93 },
          b: { value: 2, score: 1 },
          c: { value: 3, confidence: 100 },
        },
      }),
    ).toEqual([
      ['a', 1, 0.93],
      // 1 among percentages is 1 %, not certainty.
      ['b', 2, 0.01],
      ['c', 3, 1],
    ]);
  });

  test('"87%" is a percentage', () => {
    expect(
      conf({ General_fields: { a: { value: 1, confidence: '87%' }, b: { value: 2, confidence: 0.5 } } }),
    ).toEqual([
      ['a', 1, 0.87],
      ['b', 2, 0.005],
    ]);
  });

  test('a number that is no probability (negative, above 100, text) gives no confidence', () => {
    expect(
      conf({
        General_fields: {
          a: { value: 1, confidence: -0.2 },
          b: { value: 2, confidence: 250 },
          c: { value: 3, confidence: 'high' },
          d: { value: 4, confidence: 0.5 },
        },
      }),
    ).toEqual([
      ['a', 1, undefined],
      ['b', 2, undefined],
      ['c', 3, undefined],
      // 250 put the document on 0..100.
      ['d', 4, 0.005],
    ]);
  });

  test('a bare value has no confidence; the key is absent, not null', () => {
    const [field] = readFieldConfidences({ General_fields: { a: 'ACME' } });
    expect(field).toEqual({ name: 'a', value: 'ACME' });
    expect('confidence' in field!).toBe(false);
  });

  test('side by side: {values: {...}, confidences: {...}}', () => {
    expect(conf({ General_fields: { values: { a: 'x', b: 'y' }, confidences: { a: 0.9, b: 0.2 } } })).toEqual(
      [
        ['a', 'x', 0.9],
        ['b', 'y', 0.2],
      ],
    );
  });

  test('parallel arrays: {names: [...], values: [...], confidences: [...]}', () => {
    expect(
      conf({ General_fields: { names: ['a', 'b'], values: ['x', 'y'], confidences: [90, 20] } }),
    ).toEqual([
      ['a', 'x', 0.9],
      ['b', 'y', 0.2],
    ]);
  });

  test('fields named "values" and "confidences" among others are still read one by one', () => {
    expect(conf({ General_fields: { values: 'v', confidences: 'c', total: 3 } })).toEqual([
      ['values', 'v', undefined],
      ['confidences', 'c', undefined],
      ['total', 3, undefined],
    ]);
  });

  test('bare values with a separate confidence map next to General_fields', () => {
    expect(
      conf({ General_fields: { a: 'x', b: 'y', c: 'z' }, General_fields_confidence: { a: 0.8, b: '0.3' } }),
    ).toEqual([
      ['a', 'x', 0.8],
      ['b', 'y', 0.3],
      ['c', 'z', undefined],
    ]);
    expect(conf({ General_fields: { a: 'x' }, Confidence_scores: { a: { score: 0.6 } } })).toEqual([
      ['a', 'x', 0.6],
    ]);
  });

  test('bare values in General_fields, confidences in General_fields_list', () => {
    expect(
      conf({
        General_fields: { a: 'x', b: 'y' },
        General_fields_list: [
          { name: 'a', value: 'x', confidence: 0.9 },
          { field_name: 'b', value: 'y', confidence: 0.1 },
        ],
      }),
    ).toEqual([
      ['a', 'x', 0.9],
      ['b', 'y', 0.1],
    ]);
  });

  test('General_fields_list alone (General_fields empty or missing)', () => {
    expect(
      conf({
        General_fields: {},
        General_fields_list: [
          { field_id: 1, name: 'a', value: 'x', confidence: 95 },
          { label: 'b', value: 'y' },
          'junk',
        ],
      }),
    ).toEqual([
      ['a', 'x', 0.95],
      ['b', 'y', undefined],
    ]);
  });

  test('nothing readable gives no fields', () => {
    expect(conf({})).toEqual([]);
    expect(conf({ General_fields: null })).toEqual([]);
    expect(readFieldConfidences(null as never)).toEqual([]);
  });
});

const doc = {
  document_id: 7,
  General_fields: {
    vendor: { value: 'ACME', confidence: 0.95 },
    total: { value: '30.00', confidence: 0.55 },
    date: { value: '', confidence: 0.99 },
    note: 'no confidence here',
  },
  Line_fields: {
    amount: [
      { value: '10.00', confidence: 0.9 },
      { value: '19,99', confidence: 0.9 },
    ],
  },
  Fraud_verdict: 'LOW_RISK',
  Fraud_score: 0.12,
};

describe('reviewReasons', () => {
  test('no rules, no reasons', () => {
    expect(reviewReasons(doc, {})).toEqual([]);
  });

  test('minConfidence fires for a field below it, not for one without confidence', () => {
    expect(reviewReasons(doc, { minConfidence: 0.8 })).toEqual([
      {
        rule: 'minConfidence',
        field: 'total',
        value: '30.00',
        found: 0.55,
        threshold: 0.8,
        message: 'total: confidence 0.55 is below 0.8',
      },
    ]);
    expect(reviewReasons(doc, { minConfidence: 0.5 })).toEqual([]);
    // Exactly at the threshold is not below it.
    expect(reviewReasons(doc, { minConfidence: 0.55 })).toEqual([]);
  });

  test('requiredFields: missing and empty (blank, null, []), found ignoring case', () => {
    const data = { General_fields: { ...doc.General_fields, items: { value: [] }, iban: { value: null } } };
    expect(
      reviewReasons(data, { requiredFields: ['Vendor', 'date', 'po_number', 'items', 'iban', ' '] }),
    ).toEqual([
      { rule: 'requiredFields', field: 'date', value: '', message: 'date is empty' },
      { rule: 'requiredFields', field: 'po_number', message: 'po_number is missing' },
      { rule: 'requiredFields', field: 'items', value: [], message: 'items is empty' },
      { rule: 'requiredFields', field: 'iban', value: null, message: 'iban is empty' },
    ]);
  });

  test('fraud: a verdict other than clean', () => {
    const rules: ReviewRules = { fraud: { notClean: true } };
    expect(reviewReasons(doc, rules)).toEqual([]);
    expect(reviewReasons({ ...doc, Fraud_verdict: 'clean' }, rules)).toEqual([]);
    expect(reviewReasons({ ...doc, Fraud_verdict: 'Low risk' }, rules)).toEqual([]);
    expect(reviewReasons({ ...doc, Fraud_verdict: 'HIGH_RISK' }, rules)).toEqual([
      { rule: 'fraud', value: 'HIGH_RISK', message: 'fraud verdict is "HIGH_RISK", not a clean one' },
    ]);
    // No verdict: fraud was not checked, nothing to say.
    expect(reviewReasons({ ...doc, Fraud_verdict: null }, rules)).toEqual([]);
    expect(
      reviewReasons(
        { ...doc, Fraud_verdict: 'fine' },
        { fraud: { notClean: true, cleanVerdicts: ['Fine'] } },
      ),
    ).toEqual([]);
  });

  test('fraud: a score above the threshold, 0..100 read as a percentage', () => {
    expect(reviewReasons(doc, { fraud: { maxScore: 0.5 } })).toEqual([]);
    expect(reviewReasons({ ...doc, Fraud_score: 0.7 }, { fraud: { maxScore: 0.5 } })).toEqual([
      { rule: 'fraud', value: 0.7, threshold: 0.5, message: 'fraud score 0.7 is above 0.5' },
    ]);
    expect(reviewReasons({ ...doc, Fraud_score: 70 }, { fraud: { maxScore: 0.5 } })).toEqual([
      { rule: 'fraud', value: 0.7, threshold: 0.5, message: 'fraud score 0.7 is above 0.5' },
    ]);
    expect(reviewReasons({ ...doc, Fraud_score: null }, { fraud: { maxScore: 0.5 } })).toEqual([]);
  });

  test('lineTotal: sum of line amounts against the total, within the tolerance', () => {
    const rule = { lineTotal: { lineField: 'amount', totalField: 'total' } };
    // 10.00 + 19,99 = 29.99 against 30.00: off by 0.01, inside the default tolerance.
    expect(reviewReasons(doc, rule)).toEqual([]);
    expect(reviewReasons(doc, { lineTotal: { ...rule.lineTotal, tolerance: 0 } })).toEqual([
      {
        rule: 'lineTotal',
        field: 'total',
        value: 29.99,
        found: 30,
        threshold: 0,
        message: 'sum of amount over 2 line(s) is 29.99, total is 30 (tolerance 0)',
      },
    ]);
  });

  test('lineTotal: a missing or unreadable total or line amount is a reason, not a silent pass', () => {
    const rule = { lineTotal: { lineField: 'amount', totalField: 'grand_total' } };
    expect(reviewReasons(doc, rule)).toEqual([
      { rule: 'lineTotal', field: 'grand_total', message: 'total field grand_total is missing' },
    ]);
    const bad = { ...doc, Line_fields: { amount: [{ value: 'n/a', confidence: 1 }] } };
    expect(reviewReasons(bad, { lineTotal: { lineField: 'amount', totalField: 'total' } })).toEqual([
      { rule: 'lineTotal', field: 'amount', value: 'n/a', message: 'line 1: amount is not a number ("n/a")' },
    ]);
  });

  test('lineTotal reads lines given as rows too', () => {
    const rows = { ...doc, Line_fields: [{ amount: '10.00' }, { amount: { value: 20 } }] };
    expect(
      reviewReasons(rows, { lineTotal: { lineField: 'amount', totalField: 'total', tolerance: 0 } }),
    ).toEqual([]);
  });

  test('reasons of several rules come together, in rule order', () => {
    const rules: ReviewRules = {
      minConfidence: 0.8,
      requiredFields: ['po_number'],
      fraud: { notClean: true, maxScore: 0.5 },
      lineTotal: { lineField: 'amount', totalField: 'total', tolerance: 0 },
    };
    const data = { ...doc, Fraud_verdict: 'HIGH_RISK', Fraud_score: 0.9 };
    expect(reviewReasons(data, rules).map((r) => r.rule)).toEqual([
      'minConfidence',
      'requiredFields',
      'fraud',
      'fraud',
      'lineTotal',
    ]);
  });
});

describe('parseAmount', () => {
  test.each([
    [12.5, 12.5],
    ['12.50', 12.5],
    ['1,234.50', 1234.5],
    ['1.234,50', 1234.5],
    ['€ 1 234,50', 1234.5],
    ['19,99', 19.99],
    ['1,234', 1234],
    ['-3.00', -3],
    ['n/a', undefined],
    [null, undefined],
  ])('%j -> %j', (input, expected) => {
    expect(parseAmount(input)).toBe(expected);
  });
});
