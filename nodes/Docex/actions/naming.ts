/**
 * n8n's names for the table's operations and parameters, derived (never listed) so that the one
 * operation table stays the only place an operation is spelled out:
 *
 * - an operation's value is its label in camelCase (`Download File` → `downloadFile`), except
 *   n8n's own `getAll` for `Get Many`;
 * - a parameter's name is its API name in camelCase, with the API's abbreviations spelled out as
 *   n8n's nodes do (`doc_ids` → `documentIds`, `desc` → `description`).
 *
 * The names are saved in workflows: test/n8n/__snapshots__ freezes them (docs/n8n.md "Versions").
 */
import type { OperationSpec } from '@docex/shared';

const WORDS: Record<string, string> = { doc: 'document', desc: 'description' };

const camel = (words: string[]) =>
  words
    .map((w, i) => (i === 0 ? w.toLowerCase() : w.charAt(0).toUpperCase() + w.slice(1).toLowerCase()))
    .join('');

export const operationValue = (api: Pick<OperationSpec, 'action'>): string =>
  api.action === 'Get Many' ? 'getAll' : camel(api.action.split(/\s+/));

export const parameterName = (apiName: string): string => camel(apiName.split('_').map((w) => WORDS[w] ?? w));
