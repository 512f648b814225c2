/** The imperative shell of templates as code: read the account, carry out a plan, rerun. */
import type { DocexClient, Template } from '@docex/shared';
import type { Account, RemoteFolder, RemoteTemplate } from './model.ts';
import { PlanError, type Action, type Plan } from './plan.ts';

export interface Scope {
  /** Folders whose templates are read in full; all folders when omitted. */
  folders?: ReadonlySet<string>;
  /** Templates read in full wherever they are (a file may move one out of another folder). */
  templates?: ReadonlySet<string>;
}

/** The locales only when the service reports them: a missing key stays `undefined` ("not reported"). */
const reported = (t: Template, key: 'number_locale' | 'date_locale') =>
  key in t ? (t[key] ?? null) : undefined;

async function readTemplate(client: DocexClient, id: number): Promise<RemoteTemplate> {
  const t = await client.fetchTemplate({ template_id: id });
  const [fields, instructions] = await Promise.all([
    Promise.all((t.field_ids ?? []).map((field_id) => client.fetchField({ field_id }))),
    Promise.all(
      (t.instruction_ids ?? []).map((instruction_id) => client.fetchInstruction({ instruction_id })),
    ),
  ]);
  return {
    id: t.id,
    name: t.name,
    desc: t.desc ?? null,
    folder_id: t.folder_id,
    number_locale: reported(t, 'number_locale'),
    date_locale: reported(t, 'date_locale'),
    fields: fields.map((f) => ({
      id: f.id,
      name: f.name ?? null,
      type: f.type ?? null,
      format: f.format ?? null,
      desc: f.desc ?? null,
      position: f.position ?? null,
    })),
    instructions: instructions.map((i) => ({ id: i.id, type: i.type ?? null, content: i.content ?? null })),
  };
}

/** Every folder with its templates' names, and the full templates of the scope. */
export async function readAccount(client: DocexClient, scope: Scope = {}): Promise<Account> {
  const { folders: listed } = await client.fetchAllFolders();
  const folders: RemoteFolder[] = await Promise.all(
    listed.map(async (f) => {
      // A list entry without its templates is read on its own; ids without names are read one by one.
      const full = f.templates || f.template_ids ? f : await client.fetchFolder({ folder_id: f.id });
      const templates =
        full.templates?.map((t) => ({ id: t.id, name: t.name })) ??
        (await Promise.all(
          (full.template_ids ?? []).map(async (template_id) => {
            const t = await client.fetchTemplate({ template_id });
            return { id: t.id, name: t.name };
          }),
        ));
      return { id: f.id, name: f.name ?? null, desc: f.desc ?? null, templates };
    }),
  );
  const ids = folders.flatMap((f) =>
    f.templates
      .filter(
        (t) =>
          !scope.folders ||
          (f.name !== null && scope.folders.has(f.name)) ||
          (scope.templates?.has(t.name) ?? false),
      )
      .map((t) => t.id),
  );
  const templates = await Promise.all([...new Set(ids)].map((id) => readTemplate(client, id)));
  return { folders, templates };
}

export interface ApplyResult {
  done: Action[];
  templateIds: Map<string, number>;
}

/** Carries out the actions in order; an error stops at once (a second apply continues from there). */
export async function applyPlan(
  client: DocexClient,
  plan: Plan,
  account: Account,
  onAction: (action: Action) => void = () => {},
): Promise<ApplyResult> {
  const folderIds = new Map<string, number>();
  for (const f of account.folders) if (f.name) folderIds.set(f.name, f.id);
  const templateIds = new Map<string, number>();
  for (const f of account.folders) for (const t of f.templates) templateIds.set(t.name, t.id);
  const folderId = (name: string) => {
    const id = folderIds.get(name);
    if (id === undefined) throw new PlanError(`folder "${name}" does not exist`);
    return id;
  };
  const templateId = (name: string) => {
    const id = templateIds.get(name);
    if (id === undefined) throw new PlanError(`template "${name}" does not exist`);
    return id;
  };
  const changed = (a: Action) => Object.fromEntries(Object.entries(a.changes!).map(([k, c]) => [k, c.to]));
  const done: Action[] = [];
  for (const a of plan.actions) {
    const input = a.input ?? {};
    switch (`${a.kind} ${a.what}`) {
      case 'create folder': {
        const f = await client.createFolder(input as { name: string });
        folderIds.set(input.name as string, f.id);
        break;
      }
      case 'update folder':
        await client.updateFolder({ folder_id: a.id!, ...changed(a) });
        break;
      case 'create template': {
        const { folder, ...rest } = input;
        const t = await client.createTemplate({
          ...(rest as { name: string }),
          folder_id: folderId(folder as string),
        });
        templateIds.set(t.name, t.id);
        break;
      }
      case 'update template': {
        const { folder, ...rest } = changed(a);
        await client.updateTemplate({
          template_id: a.id!,
          ...rest,
          ...(folder !== undefined ? { folder_id: folderId(folder as string) } : {}),
        });
        break;
      }
      case 'delete template':
        await client.deleteTemplate({ template_id: a.id! });
        break;
      case 'create field':
        await client.createField({
          ...(input as { name: string; type: 'General fields'; format: 'text' }),
          template_id: templateId(a.template!),
        });
        break;
      case 'update field':
        await client.updateField({ field_id: a.id!, ...changed(a) });
        break;
      case 'delete field':
        await client.deleteField({ field_id: a.id! });
        break;
      case 'create instruction':
        await client.createInstruction({
          ...(input as { content: string; type: 'General fields' }),
          template_id: templateId(a.template!),
        });
        break;
      case 'update instruction':
        await client.updateInstruction({ instruction_id: a.id!, ...changed(a) });
        break;
      case 'delete instruction':
        await client.deleteInstruction({ instruction_id: a.id! });
        break;
      default:
        throw new Error(`cannot ${a.kind} a ${a.what}`);
    }
    done.push(a);
    onAction(a);
  }
  return { done, templateIds };
}

export interface RerunReport {
  template: string;
  documents: number;
  rerun: number;
  not_rerun: number;
  failed: number;
}

/** Reruns the documents of each template whose extraction changed (the service decides per document). */
export async function rerunTemplates(
  client: DocexClient,
  names: readonly string[],
  templateIds: ReadonlyMap<string, number>,
  override: boolean,
): Promise<RerunReport[]> {
  const reports: RerunReport[] = [];
  for (const template of names) {
    const ids = await client.fetchDocuments({ template_id: templateIds.get(template)! });
    const r = ids.length ? await client.rerunAll(ids, { override_extraction: override }) : undefined;
    reports.push({
      template,
      documents: ids.length,
      rerun: r?.rerun ?? 0,
      not_rerun: r?.not_rerun ?? 0,
      failed: r?.failedChunks.reduce((n, c) => n + c.doc_ids.length, 0) ?? 0,
    });
  }
  return reports;
}
