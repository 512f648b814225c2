/**
 * The one reader of review rules as a person writes them: docex-sync's `review:` sections (YAML) and
 * the n8n node's Route for Review parameters (made into the same shape) are both read here, so a
 * rule means the same in both and a mistake is said the same way. Pure: settings in, `ReviewRules`
 * (review.ts) or problems out.
 *
 *   min_confidence: 0.8            # every general field, unless its own rule says otherwise
 *   required_fields: [Supplier]    # must be present with a value
 *   fields:                        # one field's own rules
 *     VAT: { optional: true }      #   may be missing; a value it has is still checked
 *     Notes: { min_confidence: 0 } #   its confidence never holds the document
 *     Total: { min_confidence: 0.95, required: true }
 *   fraud: { not_clean: true, max_score: 0.7, clean_verdicts: [...] }
 *   line_total: { line_field: Amount, total_field: Total, tolerance: 0.01 }
 */
import { z } from 'zod/v4';
import type { FieldRule, ReviewRules } from './review.ts';

/** What a program calls the rules' keys in its messages (the config's keys, or the node's parameters). */
export interface ReviewRuleTerms {
  /** The key at `path` (from the rules' top), e.g. "fields.VAT" or "Field Rules (VAT)". */
  key: (path: ReadonlyArray<PropertyKey>) => string;
}

/** The config's own spelling: dotted keys, as docex-sync's messages print them. */
export const REVIEW_SETTING_TERMS: ReviewRuleTerms = {
  key: (path) =>
    path.map((p, i) => (typeof p === 'number' ? `[${p}]` : `${i > 0 ? '.' : ''}${String(p)}`)).join(''),
};

const confidence = z.number().min(0).max(1);

const FieldRuleSection = z.strictObject({
  /** 0..1: this field's own minimum confidence, instead of min_confidence (0: never held for it). */
  min_confidence: confidence.optional(),
  /** true: it must be present with a value. */
  required: z.boolean().optional(),
  /** true: it may be missing or empty; its confidence counts only when it has a value. */
  optional: z.boolean().optional(),
});

const normal = (name: string) => name.trim().toLowerCase();

/** The review settings' schema, its cross-key mistakes said in `terms`. */
export function reviewSettingsSchema(terms: ReviewRuleTerms = REVIEW_SETTING_TERMS) {
  return z
    .strictObject({
      /** 0..1: a general field whose confidence is below it (a field without confidence never fires). */
      min_confidence: confidence.optional(),
      /** General fields that must be present and not empty. */
      required_fields: z.array(z.string().min(1)).default([]),
      /** One general field's own rules, by its name. */
      fields: z.record(z.string().min(1), FieldRuleSection).default({}),
      fraud: z
        .strictObject({
          /** A verdict present and not clean (LOW_RISK, clean, genuine, ...: docs/decisions.md). */
          not_clean: z.boolean().default(false),
          /** 0..1: a fraud score above it (a score in (1, 100] is read as a percentage). */
          max_score: confidence.optional(),
          /** Replaces the verdicts read as clean. */
          clean_verdicts: z.array(z.string().min(1)).optional(),
        })
        .optional(),
      /** Opt-in: the sum of a line field must match a general field within the tolerance (default 0.01). */
      line_total: z
        .strictObject({
          line_field: z.string().min(1),
          total_field: z.string().min(1),
          tolerance: z.number().min(0).optional(),
        })
        .optional(),
    })
    .check((ctx) => {
      const say = (path: PropertyKey[], message: string) =>
        ctx.issues.push({ code: 'custom', input: ctx.value, path, message });
      const seen = new Map<string, string>();
      const required = new Set(ctx.value.required_fields.map(normal));
      for (const [name, rule] of Object.entries(ctx.value.fields)) {
        const at = ['fields', name];
        const twin = seen.get(normal(name));
        if (twin !== undefined)
          say(
            at,
            `names the same field as ${terms.key(['fields', twin])} (names are matched without case): merge the two`,
          );
        seen.set(normal(name), name);
        if (rule.required === true && rule.optional === true)
          say(
            at,
            'is both required and optional: keep one (required: it must have a value; optional: it may be missing)',
          );
        else if (rule.optional === true && required.has(normal(name)))
          say(
            [...at, 'optional'],
            `${name} is also in ${terms.key(['required_fields'])}: a field is either required or optional; remove one of the two`,
          );
        if (rule.min_confidence === undefined && rule.required === undefined && rule.optional === undefined)
          say(
            at,
            `gives no rule: add min_confidence (0 to 1; 0: never held for its confidence), required: true or optional: true, or remove ${name}`,
          );
      }
    });
}

/** The review settings, as read (defaults filled in). */
export type ReviewSettings = z.output<ReturnType<typeof reviewSettingsSchema>>;

/** The settings in the rules' terms (review.ts); undefined when they hold no rule (e.g. a route's `review: {}`). */
export function rulesFromSettings(s: ReviewSettings | undefined): ReviewRules | undefined {
  if (!s) return undefined;
  const fields: Record<string, FieldRule> = {};
  for (const [name, f] of Object.entries(s.fields)) {
    const rule: FieldRule = {
      ...(f.min_confidence !== undefined ? { minConfidence: f.min_confidence } : {}),
      ...(f.required === true ? { required: true } : {}),
      ...(f.optional === true ? { optional: true } : {}),
    };
    if (Object.keys(rule).length > 0) fields[name] = rule;
  }
  const fraud = s.fraud && (s.fraud.not_clean || s.fraud.max_score !== undefined) ? s.fraud : undefined;
  const rules: ReviewRules = {
    ...(s.min_confidence !== undefined ? { minConfidence: s.min_confidence } : {}),
    ...(s.required_fields.length ? { requiredFields: s.required_fields } : {}),
    ...(Object.keys(fields).length ? { fields } : {}),
    ...(fraud
      ? {
          fraud: {
            notClean: fraud.not_clean,
            ...(fraud.max_score !== undefined ? { maxScore: fraud.max_score } : {}),
            ...(fraud.clean_verdicts ? { cleanVerdicts: fraud.clean_verdicts } : {}),
          },
        }
      : {}),
    ...(s.line_total
      ? {
          lineTotal: {
            lineField: s.line_total.line_field,
            totalField: s.line_total.total_field,
            ...(s.line_total.tolerance !== undefined ? { tolerance: s.line_total.tolerance } : {}),
          },
        }
      : {}),
  };
  return Object.keys(rules).length > 0 ? rules : undefined;
}

/** A value as a message shows it: text quoted, a section or a list by its kind. */
function shown(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (Array.isArray(value)) return 'a list';
  if (value !== null && typeof value === 'object') return 'a section';
  return String(value);
}

/** The keys a section at `path` of the settings may hold (for "unknown key: the keys here are ..."). */
function keysAt(path: ReadonlyArray<PropertyKey>): string[] {
  const top = ['min_confidence', 'required_fields', 'fields', 'fraud', 'line_total'];
  const byParent: Record<string, string[]> = {
    fraud: ['not_clean', 'max_score', 'clean_verdicts'],
    line_total: ['line_field', 'total_field', 'tolerance'],
  };
  if (path.length === 0) return top;
  if (path[0] === 'fields' && path.length === 2) return Object.keys(FieldRuleSection.shape);
  return byParent[String(path[0])] ?? [];
}

/** What a value at a key must be, in words; the ranges are the schema's. */
function expected(key: string): string {
  if (key === 'min_confidence' || key === 'max_score') return 'a number from 0 to 1, e.g. 0.8';
  if (key === 'tolerance') return 'a number, 0 or more, e.g. 0.01';
  if (key === 'required' || key === 'optional' || key === 'not_clean') return 'true or false';
  if (key === 'required_fields' || key === 'clean_verdicts') return 'a list of names, e.g. [Total]';
  if (key === 'line_field' || key === 'total_field') return "a field's name, e.g. Total";
  return 'a section of rules';
}

/**
 * Reads review rules written as settings (the shape above), for a program that does not word zod's
 * issues itself (the n8n node; docex-sync composes `reviewSettingsSchema` into its config schema
 * and words them with its own file and line). Each problem is one line naming the key in `terms`
 * and what to do.
 */
export function readReviewRules(
  input: unknown,
  terms: ReviewRuleTerms = REVIEW_SETTING_TERMS,
): { rules: ReviewRules | undefined; problems: string[] } {
  const parsed = reviewSettingsSchema(terms).safeParse(input ?? {}, { reportInput: true });
  if (parsed.success) return { rules: rulesFromSettings(parsed.data), problems: [] };
  const problems = parsed.error.issues.flatMap((issue) => {
    const path = issue.path;
    if (issue.code === 'unrecognized_keys') {
      const known = keysAt(path);
      return issue.keys.map(
        (k) => `${terms.key([...path, k])}: unknown key; the keys here are ${known.join(', ')}`,
      );
    }
    if (issue.code === 'custom') return [`${terms.key(path)}: ${issue.message}`];
    const key = String(path.filter((p) => typeof p === 'string').at(-1) ?? '');
    const where = path.length === 0 ? 'the review rules' : terms.key(path);
    if (issue.code === 'invalid_key') return [`${where}: has an empty field name: give the field's name`];
    const input = (issue as { input?: unknown }).input;
    if (input === undefined) return [`${where}: is missing: set it to ${expected(key)}`];
    if (issue.code === 'too_small' && input === '') return [`${where}: is empty: give a name or remove it`];
    return [`${where}: must be ${expected(key)}, not ${shown(input)}`];
  });
  return { rules: undefined, problems };
}
