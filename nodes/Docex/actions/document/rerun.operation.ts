/**
 * Rerun: any number of document IDs through the core's rerunAll (chunks of 500, the service's limit,
 * merged into one answer). A chunk refused as a whole is listed in failedChunks; when every chunk
 * failed, the item fails with the first error.
 */
import type { IDataObject } from 'n8n-workflow';
import { jsonItem } from '../common.execute.ts';
import type { Runner } from '../node.type.ts';

export const run: Runner = async (_ctx, client, i, input) => {
  const ids = (input.doc_ids as Array<string | number>).map((id) =>
    typeof id === 'string' ? Number(id) : id,
  );
  const result = await client.rerunAll(ids, { override_extraction: input.override_extraction === true });
  if (result.chunks > 0 && result.failedChunks.length === result.chunks) throw result.failedChunks[0]!.error;
  const { failedChunks, ...merged } = result;
  const json: IDataObject = { ...(merged as IDataObject) };
  if (failedChunks.length > 0)
    json.failedChunks = failedChunks.map((c) => ({ doc_ids: c.doc_ids, error: c.error.message }));
  return [jsonItem(i, json)];
};
