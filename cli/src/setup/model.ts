/**
 * Templates as code: the setup file's schema, the account as read from the service, and the
 * conversion of an account into a setup file (export). Pure (docs/templates-as-code.md).
 */
import { z } from 'zod/v4';
import { FIELD_TYPES, LOCALES, PARAMETER_FORMATS } from '@docex/shared';
import { ConfigError } from '@docex/cli-kit/errors';
import { yaml } from '@docex/cli-kit/lazy';
import type { Located } from '@docex/cli-kit/yaml';

const Name = z.string().trim().min(1, 'a name is required');
const Desc = z.string().nullish();
const Locale = z.enum(LOCALES).nullish();

export const FieldSpec = z.strictObject({
  name: Name,
  type: z.enum(FIELD_TYPES),
  format: z.enum(PARAMETER_FORMATS),
  position: z.number().int().optional(),
  desc: Desc,
});
export const InstructionSpec = z.strictObject({
  type: z.enum(FIELD_TYPES),
  content: z.string().min(1, 'content is required'),
});
export const TemplateSpec = z.strictObject({
  name: Name,
  folder: Name,
  desc: Desc,
  number_locale: Locale,
  date_locale: Locale,
  fields: z.array(FieldSpec).default([]),
  instructions: z.array(InstructionSpec).default([]),
});
export const FolderSpec = z.strictObject({ name: Name, desc: Desc });
export const SetupSchema = z.strictObject({
  version: z.literal(1, 'this docex understands version: 1'),
  folders: z.array(FolderSpec).default([]),
  templates: z.array(TemplateSpec).default([]),
});
export type Setup = z.output<typeof SetupSchema>;
export type TemplateSetup = Setup['templates'][number];
export type FieldSetup = TemplateSetup['fields'][number];
export type InstructionSetup = TemplateSetup['instructions'][number];

/** The account as the service reports it; `undefined` locales mean "not reported". */
export interface RemoteFolder {
  id: number;
  name: string | null;
  desc: string | null;
  templates: Array<{ id: number; name: string }>;
}
export interface RemoteField {
  id: number;
  name: string | null;
  type: string | null;
  format: string | null;
  desc: string | null;
  position: number | null;
}
export interface RemoteInstruction {
  id: number;
  type: string | null;
  content: string | null;
}
export interface RemoteTemplate {
  id: number;
  name: string;
  desc: string | null;
  folder_id: number;
  number_locale?: string | null;
  date_locale?: string | null;
  fields: RemoteField[];
  instructions: RemoteInstruction[];
}
/** Every folder with its templates' names; full details only for the templates that were read. */
export interface Account {
  folders: RemoteFolder[];
  templates: RemoteTemplate[];
}

/** "" and null are both "no description". */
export const normText = (v: string | null | undefined) =>
  v === undefined || v === null || v === '' ? null : v;

const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** Duplicate names and references to folders the file does not list, each with its line. */
export function checkSetup(located: Located<Setup>): void {
  const { data, at } = located;
  const problems: string[] = [];
  const seen = (what: string, keys: Array<[string, ReadonlyArray<PropertyKey>]>) => {
    const first = new Map<string, ReadonlyArray<PropertyKey>>();
    for (const [key, path] of keys) {
      const earlier = first.get(key);
      if (earlier) problems.push(`${at(path)}: ${what} is also at ${at(earlier)}`);
      else first.set(key, path);
    }
  };
  seen(
    'a folder of this name',
    data.folders.map((f, i) => [f.name, ['folders', i, 'name']]),
  );
  seen(
    'a template of this name (template names are unique in an account)',
    data.templates.map((t, i) => [t.name, ['templates', i, 'name']]),
  );
  const folders = new Set(data.folders.map((f) => f.name));
  data.templates.forEach((t, i) => {
    if (!folders.has(t.folder))
      problems.push(`${at(['templates', i, 'folder'])}: folder "${t.folder}" is not listed under folders:`);
    seen(
      `a field of this name and type in template "${t.name}"`,
      t.fields.map((f, j) => [`${f.type}\u0000${f.name}`, ['templates', i, 'fields', j, 'name']]),
    );
  });
  if (problems.length)
    throw new ConfigError(`${located.file}: invalid\n${problems.map((p) => `  ${p}`).join('\n')}`);
}

const fieldOrder = (a: RemoteField, b: RemoteField) =>
  (a.position ?? Number.MAX_SAFE_INTEGER) - (b.position ?? Number.MAX_SAFE_INTEGER) ||
  compare(a.type ?? '', b.type ?? '') ||
  compare(a.name ?? '', b.name ?? '');

/**
 * The account (or the folders named in `onlyFolders`) as a setup, in a stable order: folders and
 * templates by name, fields by position then type and name, instructions by type then creation.
 */
export function toSetup(account: Account, onlyFolders?: ReadonlySet<string>): Setup {
  const problems: string[] = [];
  const folders = account.folders
    .filter((f) => !onlyFolders || (f.name !== null && onlyFolders.has(f.name)))
    .filter((f) => {
      if (normText(f.name) !== null) return true;
      problems.push(
        `folder ${f.id} has no name; names identify folders in a setup file (docex folders update ${f.id} --name NAME)`,
      );
      return false;
    })
    .sort((a, b) => compare(a.name!, b.name!));
  const folderName = new Map(folders.map((f) => [f.id, f.name!]));
  for (let i = 1; i < folders.length; i++)
    if (folders[i]!.name === folders[i - 1]!.name)
      problems.push(
        `folders ${folders[i - 1]!.id} and ${folders[i]!.id} are both named "${folders[i]!.name}"`,
      );
  const templates = account.templates
    .filter((t) => folderName.has(t.folder_id))
    .sort(
      (a, b) =>
        compare(folderName.get(a.folder_id)!, folderName.get(b.folder_id)!) || compare(a.name, b.name),
    )
    .map((t): TemplateSetup => {
      const fields = [...t.fields].sort(fieldOrder).map((f): FieldSetup => {
        if (!f.name || !f.type || !f.format)
          problems.push(
            `field ${f.id} of template "${t.name}" has no ${!f.name ? 'name' : !f.type ? 'type' : 'format'}`,
          );
        return {
          name: f.name ?? '',
          type: f.type as FieldSetup['type'],
          format: f.format as FieldSetup['format'],
          ...(f.position !== null ? { position: f.position } : {}),
          ...(normText(f.desc) !== null ? { desc: f.desc } : {}),
        };
      });
      const instructions = [...t.instructions]
        .sort((a, b) => compare(a.type ?? '', b.type ?? '') || a.id - b.id)
        .filter((i) => normText(i.content) !== null && i.type)
        .map((i) => ({ type: i.type as InstructionSetup['type'], content: i.content! }));
      return {
        name: t.name,
        folder: folderName.get(t.folder_id)!,
        ...(normText(t.desc) !== null ? { desc: t.desc } : {}),
        ...(typeof t.number_locale === 'string' ? { number_locale: t.number_locale as 'EU' } : {}),
        ...(typeof t.date_locale === 'string' ? { date_locale: t.date_locale as 'EU' } : {}),
        fields,
        instructions,
      };
    });
  const names = templates.map((t) => t.name);
  for (const name of new Set(names.filter((n, i) => names.indexOf(n) !== i)))
    problems.push(`two templates are named "${name}"`);
  if (problems.length) throw new ConfigError(`cannot export:\n${problems.map((p) => `  ${p}`).join('\n')}`);
  return {
    version: 1,
    folders: folders.map((f) => ({ name: f.name!, ...(normText(f.desc) !== null ? { desc: f.desc } : {}) })),
    templates,
  };
}

export function setupToYaml(setup: Setup): string {
  const doc = new (yaml().Document)(setup);
  doc.commentBefore =
    ' docex templates as code: `docex templates plan FILE`, then `docex templates apply FILE`.\n' +
    ' Names identify folders, templates and fields; see docs/templates-as-code.md.';
  return doc.toString({ lineWidth: 0 });
}
