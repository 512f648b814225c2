/**
 * plan(desired, account) → the actions that make the account match the setup file. Pure: the same
 * inputs give the same actions, in the order apply carries them out (folders, then templates, then
 * their fields and instructions; deletes last, children before parents).
 */
import {
  normText,
  type Account,
  type FieldSetup,
  type InstructionSetup,
  type RemoteField,
  type RemoteInstruction,
  type RemoteTemplate,
  type Setup,
  type TemplateSetup,
} from './model.ts';

export type What = 'folder' | 'template' | 'field' | 'instruction';
export type Change = { from: unknown; to: unknown };

export interface Action {
  kind: 'create' | 'update' | 'delete';
  what: What;
  /** What the action is about, as a person reads it: `folder "Invoices"`, `field "total" (General fields)`. */
  label: string;
  /** The template a field or instruction belongs to, or the template itself. */
  template?: string;
  /** The server id of what is updated or deleted. */
  id?: number;
  /** create: the API input, with `folder` / `template` as names (resolved to ids by apply). */
  input?: Record<string, unknown>;
  /** update: key → { from, to }; a template's `folder` is given by name. */
  changes?: Record<string, Change>;
}

export interface Plan {
  actions: Action[];
  /** Templates whose extraction the plan changes (fields, instructions, locales): a rerun may follow. */
  extractionChanged: string[];
}

export class PlanError extends Error {}

const q = (s: string | null | undefined) => JSON.stringify(s ?? null);
const excerpt = (s: string) => (s.length > 40 ? `${s.slice(0, 39)}…` : s);

function changesOf(pairs: Array<[string, unknown, unknown]>): Record<string, Change> | undefined {
  const changes: Record<string, Change> = {};
  for (const [key, from, to] of pairs) if (from !== to) changes[key] = { from, to };
  return Object.keys(changes).length ? changes : undefined;
}

/** A desired locale is compared only when set in the file and reported by the service. */
const localeChange = (key: string, remote: string | null | undefined, wanted: string | null | undefined) =>
  wanted === undefined || remote === undefined ? [] : [[key, remote, wanted] as [string, unknown, unknown]];

function uniqueByName<T extends { id: number }>(what: string, items: T[], nameOf: (t: T) => string | null) {
  const map = new Map<string, T>();
  const twice = new Set<string>();
  for (const item of items) {
    const name = nameOf(item);
    if (name === null) continue;
    if (map.has(name)) twice.add(name);
    map.set(name, item);
  }
  return {
    get(name: string): T | undefined {
      if (twice.has(name)) {
        const ids = items.filter((i) => nameOf(i) === name).map((i) => i.id);
        throw new PlanError(
          `the account has ${ids.length} ${what}s named "${name}" (ids ${ids.join(', ')}): rename all but one first`,
        );
      }
      return map.get(name);
    },
  };
}

const fieldLabel = (f: { name: string | null; type: string | null }) =>
  `field ${q(f.name)} (${f.type ?? 'no type'})`;

function planFields(template: string, desired: FieldSetup[], remote: RemoteField[], out: Action[]) {
  const unused = new Set(remote);
  const take = (match: (f: RemoteField) => boolean) => {
    for (const f of unused)
      if (match(f)) {
        unused.delete(f);
        return f;
      }
    return undefined;
  };
  // Same name and type first; then same name only (a change of type is an update, not a replacement).
  const pairs = desired.map((d) => [d, take((f) => f.name === d.name && f.type === d.type)] as const);
  for (const [d, found] of pairs) {
    const f = found ?? take((r) => r.name === d.name);
    if (!f) {
      out.push({
        kind: 'create',
        what: 'field',
        template,
        label: fieldLabel(d),
        input: {
          name: d.name,
          type: d.type,
          format: d.format,
          ...(normText(d.desc) !== null ? { desc: d.desc } : {}),
          ...(d.position !== undefined ? { position: d.position } : {}),
        },
      });
      continue;
    }
    const changes = changesOf([
      ['type', f.type, d.type],
      ['format', f.format, d.format],
      ['desc', normText(f.desc), normText(d.desc)],
      ...(d.position !== undefined
        ? [['position', f.position, d.position] as [string, unknown, unknown]]
        : []),
    ]);
    if (changes)
      out.push({ kind: 'update', what: 'field', template, label: fieldLabel(d), id: f.id, changes });
  }
  for (const f of unused)
    out.push({ kind: 'delete', what: 'field', template, label: fieldLabel(f), id: f.id });
}

const instructionLabel = (i: { type: string | null; content: string | null }) =>
  `instruction (${i.type ?? 'no type'}) ${q(excerpt(i.content ?? ''))}`;

function planInstructions(
  template: string,
  desired: InstructionSetup[],
  remote: RemoteInstruction[],
  out: Action[],
) {
  const unused = [...remote];
  const unmatched: InstructionSetup[] = [];
  for (const d of desired) {
    const i = unused.findIndex((r) => r.type === d.type && r.content === d.content);
    if (i >= 0) unused.splice(i, 1);
    else unmatched.push(d);
  }
  // What is left of one type is paired in order: an edited instruction is an update of its content.
  for (const d of unmatched) {
    const i = unused.findIndex((r) => r.type === d.type);
    if (i < 0) {
      out.push({
        kind: 'create',
        what: 'instruction',
        template,
        label: instructionLabel(d),
        input: { ...d },
      });
      continue;
    }
    const [r] = unused.splice(i, 1);
    out.push({
      kind: 'update',
      what: 'instruction',
      template,
      label: instructionLabel(r!),
      id: r!.id,
      changes: { content: { from: r!.content, to: d.content } },
    });
  }
  for (const r of unused)
    out.push({ kind: 'delete', what: 'instruction', template, label: instructionLabel(r), id: r.id });
}

function planTemplate(
  t: TemplateSetup,
  remote: RemoteTemplate | undefined,
  folderOf: (id: number) => string | null,
  out: Action[],
) {
  const label = `template ${q(t.name)}`;
  if (!remote) {
    out.push({
      kind: 'create',
      what: 'template',
      template: t.name,
      label,
      input: {
        folder: t.folder,
        name: t.name,
        ...(normText(t.desc) !== null ? { desc: t.desc } : {}),
        ...(t.number_locale != null ? { number_locale: t.number_locale } : {}),
        ...(t.date_locale != null ? { date_locale: t.date_locale } : {}),
      },
    });
    planFields(t.name, t.fields, [], out);
    planInstructions(t.name, t.instructions, [], out);
    return;
  }
  const changes = changesOf([
    ['folder', folderOf(remote.folder_id), t.folder],
    ['desc', normText(remote.desc), normText(t.desc)],
    ...localeChange('number_locale', remote.number_locale, t.number_locale),
    ...localeChange('date_locale', remote.date_locale, t.date_locale),
  ]);
  if (changes)
    out.push({ kind: 'update', what: 'template', template: t.name, label, id: remote.id, changes });
  planFields(t.name, t.fields, remote.fields, out);
  planInstructions(t.name, t.instructions, remote.instructions, out);
}

const rank = (a: Action) => (a.kind !== 'delete' ? 0 : a.what === 'template' ? 2 : 1);

export function plan(desired: Setup, account: Account): Plan {
  const actions: Action[] = [];
  const folders = uniqueByName('folder', account.folders, (f) => normText(f.name));
  for (const f of desired.folders) {
    const remote = folders.get(f.name);
    const label = `folder ${q(f.name)}`;
    if (!remote) {
      actions.push({
        kind: 'create',
        what: 'folder',
        label,
        input: { name: f.name, ...(normText(f.desc) !== null ? { desc: f.desc } : {}) },
      });
      continue;
    }
    const changes = changesOf([['desc', normText(remote.desc), normText(f.desc)]]);
    if (changes) actions.push({ kind: 'update', what: 'folder', label, id: remote.id, changes });
  }

  const folderById = new Map(account.folders.map((f) => [f.id, f]));
  const folderOf = (id: number) => folderById.get(id)?.name ?? null;
  const templates = uniqueByName('template', account.templates, (t) => t.name);
  const listed = uniqueByName(
    'template',
    account.folders.flatMap((f) => f.templates),
    (t) => t.name,
  );
  const wanted = new Set<string>();
  for (const t of desired.templates) {
    wanted.add(t.name);
    const remote = templates.get(t.name);
    if (!remote && listed.get(t.name))
      throw new PlanError(`template "${t.name}" exists but was not read from the service`);
    planTemplate(t, remote, folderOf, actions);
  }

  // Templates the file does not name, in the folders it manages, are deleted (with --prune).
  const managed = new Set(desired.folders.map((f) => f.name));
  for (const f of account.folders) {
    if (f.name === null || !managed.has(f.name)) continue;
    for (const t of f.templates) {
      if (!wanted.has(t.name))
        actions.push({
          kind: 'delete',
          what: 'template',
          template: t.name,
          label: `template ${q(t.name)}`,
          id: t.id,
        });
    }
  }

  const ordered = actions.map((a, i) => [a, i] as const).sort(([a, i], [b, j]) => rank(a) - rank(b) || i - j);
  const existing = new Set(account.templates.map((t) => t.name));
  const extractionChanged = [
    ...new Set(
      actions
        .filter(
          (a) =>
            a.template !== undefined &&
            existing.has(a.template) &&
            wanted.has(a.template) &&
            (a.what === 'field' ||
              a.what === 'instruction' ||
              (a.kind === 'update' && ('number_locale' in a.changes! || 'date_locale' in a.changes!))),
        )
        .map((a) => a.template!),
    ),
  ];
  return { actions: ordered.map(([a]) => a), extractionChanged };
}

export const deletesOf = (p: Plan) => p.actions.filter((a) => a.kind === 'delete');

/** Refuses a plan that deletes without --prune, naming what it would delete. */
export function checkPrune(p: Plan, prune: boolean): void {
  const deletes = deletesOf(p);
  if (prune || deletes.length === 0) return;
  const lines = deletes.map(
    (a) => `  ${a.label}${a.what !== 'template' ? ` of template ${q(a.template)}` : ''}`,
  );
  throw new PlanError(
    `${deletes.length} thing(s) on the service are not in the file and would be deleted:\n${lines.join('\n')}\n` +
      'Add them to the file, or run again with --prune to delete them.',
  );
}

const show = (v: unknown) => (v === null || v === undefined ? 'null' : JSON.stringify(v));

/**
 * The plan as a diff: `+` create, `~` update, `-` delete, then a summary line. Without `prune`,
 * deletes are shown for what they are: what --prune would delete, and why apply stops without it.
 */
export function formatPlan(p: Plan, prune = false): string {
  const lines = p.actions.map((a) => {
    const where = a.what === 'field' || a.what === 'instruction' ? ` in template ${q(a.template)}` : '';
    if (a.kind === 'create') {
      const details =
        a.what === 'field'
          ? ` ${show(a.input!.format)}`
          : a.what === 'template'
            ? ` in folder ${q(a.input!.folder as string)}`
            : '';
      return `+ ${a.label}${details}${where}`;
    }
    if (a.kind === 'delete') return `- ${a.label}${where}`;
    const changes = Object.entries(a.changes!).map(([k, c]) => `    ${k}: ${show(c.from)} → ${show(c.to)}`);
    return [`~ ${a.label}${where}`, ...changes].join('\n');
  });
  const count = (kind: Action['kind']) => p.actions.filter((a) => a.kind === kind).length;
  const summary =
    p.actions.length === 0
      ? 'No changes: the account matches the file.'
      : prune || count('delete') === 0
        ? `Plan: ${count('create')} to create, ${count('update')} to change, ${count('delete')} to delete.`
        : `Plan: ${count('create')} to create, ${count('update')} to change; ${count('delete')} would be deleted with --prune. ` +
          'Without --prune, apply refuses this plan and changes nothing.';
  const extraction = p.extractionChanged.length
    ? `\nExtraction changes for: ${p.extractionChanged.map((t) => q(t)).join(', ')} (apply --rerun reruns their documents).`
    : '';
  return [...lines, summary].join('\n') + extraction;
}
