import type { IDataObject } from 'n8n-workflow';
import type { Folder } from '@docex/shared';
import { resourceProperties, RETURN_ALL } from '../common.descriptions.ts';
import { jsonItem, limitOf } from '../common.execute.ts';
import { fromTable } from '../resource.ts';

export const operations = fromTable('Folder', {
  fetch_all_folders: {
    description: 'List many folders, with their templates',
    extraProperties: RETURN_ALL,
    // One item per folder, as n8n's "Get Many" operations do.
    run: async (ctx, client, i) => {
      const folders = (await client.fetchAllFolders()).folders;
      return folders
        .slice(0, limitOf(ctx, i) ?? folders.length)
        .map((f: Folder) => jsonItem(i, f as IDataObject));
    },
  },
});

export const description = resourceProperties('Folder', operations);
