/** Folders and templates to pick from in the resource locators, both read from fetch_all_folders. */
import type { ILoadOptionsFunctions, INodeListSearchItems, INodeListSearchResult } from 'n8n-workflow';
import type { Folder } from '@docex/shared';
import { docexClient } from '../transport/index.ts';

/** Templates a folder lists by id only (no `templates` entries) are looked up, at most this many. */
const MAX_TEMPLATE_LOOKUPS = 50;

async function allFolders(ctx: ILoadOptionsFunctions, withTemplates = false): Promise<Folder[]> {
  const client = await docexClient(ctx);
  const folders = (await client.fetchAllFolders()).folders;
  if (!withTemplates) return folders;
  let lookups = 0;
  for (const folder of folders) {
    const listed = new Set((folder.templates ?? []).map((t) => t.id));
    const missing = (folder.template_ids ?? []).filter((id) => !listed.has(id));
    for (const id of missing) {
      if (lookups++ >= MAX_TEMPLATE_LOOKUPS) break;
      const t = await client.fetchTemplate({ template_id: id });
      folder.templates = [...(folder.templates ?? []), { id: t.id, name: t.name, desc: t.desc ?? null }];
    }
  }
  return folders;
}

const matches = (filter: string | undefined, ...texts: string[]) =>
  !filter || texts.some((t) => t.toLowerCase().includes(filter.trim().toLowerCase()));

const byName = (a: INodeListSearchItems, b: INodeListSearchItems) => a.name.localeCompare(b.name);

export async function searchFolders(
  this: ILoadOptionsFunctions,
  filter?: string,
): Promise<INodeListSearchResult> {
  const results = (await allFolders(this))
    .map((f) => ({ name: f.name || `Folder ${f.id}`, value: String(f.id), description: f.desc ?? undefined }))
    .filter((f) => matches(filter, f.name, f.value))
    .sort(byName);
  return { results };
}

export async function searchTemplates(
  this: ILoadOptionsFunctions,
  filter?: string,
): Promise<INodeListSearchResult> {
  const results: INodeListSearchItems[] = [];
  const seen = new Set<number>();
  for (const folder of await allFolders(this, true)) {
    for (const t of folder.templates ?? []) {
      if (seen.has(t.id)) continue;
      seen.add(t.id);
      const name = `${t.name} (${folder.name || `Folder ${folder.id}`})`;
      if (matches(filter, name, String(t.id)))
        results.push({ name, value: String(t.id), description: t.desc ?? undefined });
    }
  }
  return { results: results.sort(byName) };
}
