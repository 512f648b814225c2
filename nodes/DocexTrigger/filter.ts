/**
 * The trigger's "Emit Only" filter: every document (default), only those whose fraud verdict is not
 * clean, or only those that need review by the rules of the action node's Route for Review (the
 * shared core's reviewReasons). A document's data does not carry the fraud verdict: it is read from
 * the document's task result, only when the filter needs it. Documents filtered out are still
 * recorded as seen: they are not emitted later either.
 */
import type { IDataObject, INodeProperties } from 'n8n-workflow';
import type { DocexClient, DocumentData, ReviewData, ReviewRules } from '@docex/shared';
import { REASONS_KEY, reasonsFor, reviewRuleProperties, withFraud } from '../Docex/actions/review.ts';

export type EmitOnly = 'all' | 'fraudNotClean' | 'needsReview';

export const EMIT_ONLY = 'emitOnly';

export const filterProperties: INodeProperties[] = [
  {
    displayName: 'Emit Only',
    name: EMIT_ONLY,
    type: 'options',
    options: [
      { name: 'All Documents', value: 'all' },
      {
        name: 'Fraud Verdict Not Clean',
        value: 'fraudNotClean',
        description: 'Documents whose fraud verdict is not clean (e.g. MEDIUM_RISK, HIGH_RISK)',
      },
      {
        name: 'Needs Review',
        value: 'needsReview',
        description:
          'Documents that break one of the review rules below (confidence, required fields, fraud)',
      },
    ],
    default: 'all',
    description: 'Which documents start the workflow',
  },
  ...reviewRuleProperties.map((p) => ({ ...p, displayOptions: { show: { [EMIT_ONLY]: ['needsReview'] } } })),
];

/** The rules a filter applies; undefined for "All Documents". */
export function filterRules(emitOnly: EmitOnly, rulesOfNode: () => ReviewRules): ReviewRules | undefined {
  if (emitOnly === 'fraudNotClean') return { fraud: { notClean: true } };
  if (emitOnly === 'needsReview') return rulesOfNode();
  return undefined;
}

/** The documents the rules flag, with their fraud verdict and `review_reasons` added. */
export async function flagged(
  client: DocexClient,
  docs: DocumentData[],
  rules: ReviewRules,
): Promise<Array<DocumentData & IDataObject>> {
  const out: Array<DocumentData & IDataObject> = [];
  for (const doc of docs) {
    const data = rules.fraud ? await withFraud(client, doc as ReviewData) : doc;
    const reasons = reasonsFor(data, rules);
    if (reasons.length > 0)
      out.push({ ...(data as DocumentData), [REASONS_KEY]: reasons as unknown as IDataObject[] });
  }
  return out;
}
