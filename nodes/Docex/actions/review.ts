/**
 * "Route for Review" on Extract and Get Data: items whose data breaks one of the review rules go to a
 * second output, "Needs Review" (two outputs like the If node), each with `review_reasons`. The rules
 * are the shared core's (shared/src/core/review.ts), the same the trigger's filter and the daemon's
 * review queue use.
 */
import type { IDataObject, IExecuteFunctions, INodeExecutionData, INodeProperties } from 'n8n-workflow';
import {
  reviewReasons,
  type DocexClient,
  type ReviewData,
  type ReviewReason,
  type ReviewRules,
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

/** The rules as set on the node (`get` reads a parameter of the item or of the trigger). */
export function rulesFrom(get: (name: string, fallback: unknown) => unknown): ReviewRules {
  const more = (get('reviewMore', {}) ?? {}) as IDataObject;
  const minConfidence = Number(get('reviewMinConfidence', 0.8));
  const required = splitList(get('reviewRequiredFields', ''));
  const rules: ReviewRules = {};
  if (Number.isFinite(minConfidence) && minConfidence > 0) rules.minConfidence = minConfidence;
  if (required.length > 0) rules.requiredFields = required;
  const clean = splitList(more.cleanVerdicts);
  const fraud: NonNullable<ReviewRules['fraud']> = {};
  if (get('reviewFraud', true) === true) fraud.notClean = true;
  if (more.maxFraudScore !== undefined && more.maxFraudScore !== '')
    fraud.maxScore = Number(more.maxFraudScore);
  if (clean.length > 0) fraud.cleanVerdicts = clean;
  if (fraud.notClean || fraud.maxScore !== undefined) rules.fraud = fraud;
  const lineField = String(more.lineAmountField ?? '').trim();
  const totalField = String(more.totalField ?? '').trim();
  if (lineField && totalField) {
    const tolerance = Number(more.lineTotalTolerance ?? 0.01);
    rules.lineTotal = { lineField, totalField, tolerance: Number.isFinite(tolerance) ? tolerance : 0.01 };
  }
  return rules;
}

/** Whether Route for Review is on (read once per run: the number of outputs is the node's, not an item's). */
export const routing = (ctx: IExecuteFunctions) => ctx.getNodeParameter(ROUTE_FOR_REVIEW, 0, false) === true;

export const itemRules = (ctx: IExecuteFunctions, i: number) =>
  rulesFrom((name, fallback) => ctx.getNodeParameter(name, i, fallback));

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
