import type { Folder } from '../../../../shared/src/core/index.ts';
import { resourceProperties } from '../common.descriptions.ts';
import { jsonItem } from '../common.execute.ts';
import { fromTable } from '../resource.ts';

export const operations = fromTable('Folder', {
  fetch_all_folders: {
    // One item per folder, as n8n's "Get Many" operations do.
    run: async (_ctx, client, i) =>
      (await client.fetchAllFolders()).folders.map((f: Folder) => jsonItem(i, f)),
  },
});

export const description = resourceProperties('Folder', operations);
