/**
 * "Route for Review" on Extract and Get Data: items whose data breaks one of the review rules go to a
 * second output, "Needs Review" (two outputs like the If node), each with `review_reasons`. The rules
 * are the shared core's (shared/src/core/review.ts), the same the trigger's filter and the daemon's
 * review queue use.
 */
import {
  NodeOperationError,
  type IDataObject,
  type IExecuteFunctions,
  type INodeExecutionData,
  type INodeProperties,
} from 'n8n-workflow';
import {
  readReviewRules,
  reviewReasons,
  type DocexClient,
  type ReviewData,
  type ReviewReason,
  type ReviewRules,
  type ReviewRuleTerms,
} from '@docex/shared';

/** "a, b; c" or an array (from an expression) as names. */
const splitList = (value: unknown): string[] =>
  (Array.isArray(value) ? value.map(String) : String(value ?? '').split(/[,;\n]+/))
    .map((s) => s.trim())
    .filter((s) => s !== '');

export const ROUTE_FOR_REVIEW = 'routeForReview';
export const REVIEW_OUTPUT_NAMES = ['Done', 'Needs Review'] as const;
/** The key of the reasons on an item of the "Needs Review" output. */
export const REASONS_KEY = 'review_reasons';

/** The rule parameters, as both nodes show them (the trigger with its own displayOptions). */
export const reviewRuleProperties: INodeProperties[] = [
  {
    displayName: 'Min Confidence',
    name: 'reviewMinConfidence',
    type: 'number',
    typeOptions: { minValue: 0, maxValue: 1, numberPrecision: 2 },
    default: 0.8,
    description:
      'A general field whose confidence (0 to 1) is below this needs review; a field the service gives no confidence for does not. 0 turns the rule off.',
  },
  {
    displayName: 'Required Fields',
    name: 'reviewRequiredFields',
    type: 'string',
    default: '',
    placeholder: 'e.g. invoice_number, total',
    description:
      'General fields that must have a value, comma-separated; a missing or empty one needs review',
  },
  {
    displayName: 'Field Rules',
    name: 'reviewFieldRules',
    type: 'fixedCollection',
    typeOptions: { multipleValues: true },
    placeholder: 'Add Field Rule',
    default: {},
    description:
      "Rules of single general fields, instead of Min Confidence and besides Required Fields: the same as docex-sync's review.fields",
    options: [
      {
        displayName: 'Rule',
        name: 'rule',
        values: [
          {
            displayName: 'Field',
            name: 'field',
            type: 'string',
            default: '',
            placeholder: 'e.g. VAT',
            description: "The general field's name, as in the template (case is ignored)",
          },
          {
            displayName: 'Rule',
            name: 'kind',
            type: 'options',
            default: 'minConfidence',
            options: [
              {
                name: 'Own Min Confidence',
                value: 'minConfidence',
                description:
                  'Its own minimum instead of Min Confidence (0: its confidence never needs review)',
              },
              {
                name: 'Required',
                value: 'required',
                description: 'It must have a value (like Required Fields)',
              },
              {
                name: 'Optional',
                value: 'optional',
                description:
                  'It may be missing or empty: then its confidence does not count; a value it has is still checked',
              },
            ],
          },
          {
            displayName: 'Min Confidence',
            name: 'minConfidence',
            type: 'number',
            typeOptions: { minValue: 0, maxValue: 1, numberPrecision: 2 },
            default: 0.8,
            displayOptions: { show: { kind: ['minConfidence'] } },
            description: 'Below this (0 to 1) the field needs review; 0 exempts it',
          },
        ],
      },
    ],
  },
  {
    displayName: 'Fraud Verdict Not Clean',
    name: 'reviewFraud',
    type: 'boolean',
    default: true,
    description:
      'Whether a document whose fraud verdict is not clean (e.g. MEDIUM_RISK, HIGH_RISK) needs review',
  },
  {
    displayName: 'More Rules',
    name: 'reviewMore',
    type: 'collection',
    placeholder: 'Add Rule',
    default: {},
    options: [
      {
        displayName: 'Clean Verdicts',
        name: 'cleanVerdicts',
        type: 'string',
        default: '',
        placeholder: 'e.g. LOW_RISK, clean',
        description:
          'Fraud verdicts that count as clean, comma-separated (case and punctuation ignored); by default clean, low risk, genuine, pass and the like',
      },
      {
        displayName: 'Line Amount Field',
        name: 'lineAmountField',
        type: 'string',
        default: '',
        placeholder: 'e.g. total_price',
        description: 'Line field whose sum must equal the Total Field (both needed for this check)',
      },
      {
        displayName: 'Max Fraud Score',
        name: 'maxFraudScore',
        type: 'number',
        typeOptions: { minValue: 0, maxValue: 1, numberPrecision: 2 },
        default: 0.5,
        description: 'A fraud score (0 to 1) above this needs review',
      },
      {
        displayName: 'Total Field',
        name: 'totalField',
        type: 'string',
        default: '',
        placeholder: 'e.g. invoice_amount',
        description: 'General field the line amounts must add up to',
      },
      {
        displayName: 'Total Tolerance',
        name: 'lineTotalTolerance',
        type: 'number',
        typeOptions: { minValue: 0 },
        default: 0.01,
        description: 'How far the sum of the lines may be from the total',
      },
    ],
  },
];

export const routeForReviewProperty: INodeProperties = {
  displayName: 'Route for Review',
  name: ROUTE_FOR_REVIEW,
  type: 'boolean',
  default: false,
  noDataExpression: true,
  description:
    'Whether to send items that need a person (low confidence, missing fields, fraud) to a second output, "Needs Review", each with its reasons',
};

const showWhenRouting = (p: INodeProperties): INodeProperties => ({
  ...p,
  displayOptions: { show: { [ROUTE_FOR_REVIEW]: [true] } },
});

/** Route for Review and its rules, shown under it when on. */
export const reviewProperties: INodeProperties[] = [
  routeForReviewProperty,
  ...reviewRuleProperties.map(showWhenRouting),
];

/** The parameters as the shared reader's messages name them (it reads the node's rules as settings). */
const NODE_TERMS: ReviewRuleTerms = {
  key(path) {
    const [head, name] = path;
    if (head === 'fields') return name === undefined ? 'Field Rules' : `Field Rules (${String(name)})`;
    const names: Record<string, string> = {
      min_confidence: 'Min Confidence',
      required_fields: 'Required Fields',
      max_score: 'More Rules > Max Fraud Score',
      clean_verdicts: 'More Rules > Clean Verdicts',
      line_field: 'More Rules > Line Amount Field',
      total_field: 'More Rules > Total Field',
      tolerance: 'More Rules > Total Tolerance',
    };
    const last = [...path].reverse().find((p) => typeof p === 'string');
    return names[String(last)] ?? path.map(String).join('.');
  },
};

/** Review rules set on the node that cannot be read: each problem names the parameter and what to do. */
export class ReviewRulesError extends Error {
  readonly problems: string[];
  constructor(problems: string[]) {
    super(`Route for Review: ${problems.join('; ')}`);
    this.problems = problems;
  }
}

/**
 * The node's parameters as review settings, the shape docex-sync's `review:` has (review-rules.ts
 * in the shared core), so the one reader reads both. Several Field Rules of one field add up.
 */
export function settingsFrom(get: (name: string, fallback: unknown) => unknown): {
  settings: IDataObject;
  problems: string[];
} {
  const more = (get('reviewMore', {}) ?? {}) as IDataObject;
  const problems: string[] = [];
  const settings: IDataObject = {};
  const minConfidence = Number(get('reviewMinConfidence', 0.8));
  if (Number.isFinite(minConfidence) && minConfidence > 0) settings.min_confidence = minConfidence;
  settings.required_fields = splitList(get('reviewRequiredFields', ''));
  const fields: Record<string, IDataObject> = {};
  const entries = ((get('reviewFieldRules', {}) ?? {}) as IDataObject).rule;
  for (const entry of (Array.isArray(entries) ? entries : []) as IDataObject[]) {
    const name = String(entry.field ?? '').trim();
    if (name === '') {
      problems.push(
        "Field Rules: a rule has no field name: type the general field's name, or remove the rule",
      );
      continue;
    }
    const rule = (fields[name] ??= {});
    if (entry.kind === 'required') rule.required = true;
    else if (entry.kind === 'optional') rule.optional = true;
    else {
      const own = Number(entry.minConfidence ?? 0.8);
      if (rule.min_confidence !== undefined && rule.min_confidence !== own)
        problems.push(
          `Field Rules (${name}): two Own Min Confidence rules (${String(rule.min_confidence)} and ${own}): keep one`,
        );
      rule.min_confidence = own;
    }
  }
  settings.fields = fields;
  const clean = splitList(more.cleanVerdicts);
  const fraud: IDataObject = {};
  if (get('reviewFraud', true) === true) fraud.not_clean = true;
  if (more.maxFraudScore !== undefined && more.maxFraudScore !== '')
    fraud.max_score = Number(more.maxFraudScore);
  if (clean.length > 0) fraud.clean_verdicts = clean;
  if (fraud.not_clean === true || fraud.max_score !== undefined) settings.fraud = fraud;
  const lineField = String(more.lineAmountField ?? '').trim();
  const totalField = String(more.totalField ?? '').trim();
  if (lineField && totalField) {
    const tolerance = Number(more.lineTotalTolerance ?? 0.01);
    settings.line_total = {
      line_field: lineField,
      total_field: totalField,
      tolerance: Number.isFinite(tolerance) ? tolerance : 0.01,
    };
  }
  return { settings, problems };
}

/** The rules as set on the node (`get` reads a parameter of the item or of the trigger), read by the shared reader. */
function readNodeRules(get: (name: string, fallback: unknown) => unknown): {
  rules: ReviewRules;
  problems: string[];
} {
  const { settings, problems } = settingsFrom(get);
  const read = readReviewRules(settings, NODE_TERMS);
  return { rules: read.rules ?? {}, problems: [...problems, ...read.problems] };
}

/** The rules as set on the node; ReviewRulesError when they cannot be read. */
export function rulesFrom(get: (name: string, fallback: unknown) => unknown): ReviewRules {
  const { rules, problems } = readNodeRules(get);
  if (problems.length > 0) throw new ReviewRulesError(problems);
  return rules;
}

/** Whether Route for Review is on (read once per run: the number of outputs is the node's, not an item's). */
export const routing = (ctx: IExecuteFunctions) => ctx.getNodeParameter(ROUTE_FOR_REVIEW, 0, false) === true;

export function itemRules(ctx: IExecuteFunctions, i: number): ReviewRules {
  const { rules, problems } = readNodeRules((name, fallback) => ctx.getNodeParameter(name, i, fallback));
  if (problems.length > 0)
    throw new NodeOperationError(ctx.getNode(), new ReviewRulesError(problems).message, {
      itemIndex: i,
      description: 'Correct these Route for Review parameters.',
    });
  return rules;
}

/** Whether the rules look at the fraud verdict, which fetch_document_data does not carry. */
export const needsFraud = (rules: ReviewRules) => rules.fraud !== undefined;

/**
 * The data with its fraud verdict: a document's data does not carry it, its task result does
 * (fetch_tasks_results by the document's task_id). Left as is when there is nothing to look up.
 */
export async function withFraud(client: DocexClient, data: ReviewData): Promise<ReviewData> {
  const d = data as IDataObject;
  if (d.Fraud_verdict !== undefined && d.Fraud_verdict !== null) return data;
  if (typeof d.task_id !== 'string' || d.task_id === '') return data;
  const task = (await client.call('fetch_tasks_results', { task_id: d.task_id })) as IDataObject;
  return {
    ...d,
    Fraud_verdict: task.Fraud_verdict ?? null,
    Fraud_score: task.Fraud_score ?? null,
    Fraud_justification: task.Fraud_justification ?? null,
  };
}

/** Items marked by a runner as needing review; the router sends them to the second output. */
const needsReview = new WeakSet<INodeExecutionData>();

export function markForReview(item: INodeExecutionData, reasons: ReviewReason[]): INodeExecutionData {
  if (reasons.length === 0) return item;
  item.json[REASONS_KEY] = reasons as unknown as IDataObject[];
  needsReview.add(item);
  return item;
}

export const isMarkedForReview = (item: INodeExecutionData) => needsReview.has(item);

/** Reasons for one item's data, under the node's rules. */
export const reasonsFor = (data: ReviewData, rules: ReviewRules) => reviewReasons(data, rules);

/**
 * The node's outputs: one, or "Done" and "Needs Review" when Route for Review is on for an operation
 * that reviews. n8n evaluates this with the node's parameters (defaults filled in) in the editor and
 * when it runs.
 */
export function outputsExpression(
  operations: Array<{ resource: string; operation: string }>,
): `={{${string}}}` {
  const ops = JSON.stringify(operations.map((o) => `${o.resource}:${o.operation}`));
  const two = JSON.stringify(REVIEW_OUTPUT_NAMES.map((displayName) => ({ type: 'main', displayName })));
  return `={{ ${ops}.includes($parameter.resource + ":" + $parameter.operation) && $parameter.${ROUTE_FOR_REVIEW} === true ? ${two} : ["main"] }}`;
}
