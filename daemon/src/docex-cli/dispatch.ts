/**
 * What docex does once it is past --version and --help (docex.ts answers those with almost nothing
 * loaded and imports this for every other command): the commands made from the operation table,
 * the shortcuts, templates as code, and the mapping of errors to exit codes.
 */
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import {
  DocexInputError,
  generalFieldsOf,
  lineItemsOf,
  type BinaryResult,
  type DocexClient,
  type OperationName,
  type TaskResult,
} from '@docex/shared';
import { saveBinary } from '@docex/shared/node';
import { ConfigError } from '../common/config.ts';
import { EXIT, exitCodeFor } from '../common/exit.ts';
import { booleanTest, extrasFor, inputOf, parseArgs, type ParsedArgs } from './args.ts';
import {
  actionsOf,
  findOperationCommand,
  mainHelp,
  operationHelp,
  resourceHelp,
  RESOURCE_COMMANDS,
  UsageError,
  type OperationCommand,
} from './commands.ts';
import { completionScript } from './completion.ts';
import { json, render, table } from './output.ts';
import { clientFrom, settingsFor } from './profile.ts';
import { checkSetup, setupToYaml, SetupSchema, toSetup } from './setup/model.ts';
import { checkPrune, formatPlan, plan as makePlan, PlanError, type Action } from './setup/plan.ts';
import { applyPlan, readAccount, rerunTemplates } from './setup/remote.ts';
import { readYamlFile } from './yaml.ts';
import packageJson from '../../package.json' with { type: 'json' };

export interface Io {
  stdout: NodeJS.WritableStream & { isTTY?: boolean };
  stderr: NodeJS.WritableStream;
  env: NodeJS.ProcessEnv;
}

interface Context {
  io: Io;
  /** JSON output: --json, or stdout is not a terminal. */
  json: boolean;
  client: () => DocexClient;
  out: (text: string) => void;
}

function contextFor(io: Io, options: Record<string, string | boolean>): Context {
  let client: DocexClient | undefined;
  return {
    io,
    json: options.json === true || !io.stdout.isTTY,
    out: (text) => void io.stdout.write(text.endsWith('\n') ? text : `${text}\n`),
    client: () =>
      (client ??= clientFrom(
        settingsFor(
          { profile: options.profile as string | undefined, config: options.config as string | undefined },
          io.env,
        ),
        io.env,
        (line) => void io.stderr.write(`${line}\n`),
        options.debug === true,
      )),
  };
}

async function writeBinary(ctx: Context, result: BinaryResult, output: string | undefined, fallback: string) {
  if (output === '-' || (output === undefined && !ctx.io.stdout.isTTY)) {
    for await (const chunk of result.body) {
      if (!ctx.io.stdout.write(chunk)) await new Promise((r) => ctx.io.stdout.once('drain', r));
    }
    return;
  }
  const path = resolve(output ?? result.fileName ?? fallback);
  if (output === undefined && existsSync(path)) {
    for await (const _ of result.body) break; // let go of the download
    throw new UsageError(`${path} exists already; choose another name with -o FILE`);
  }
  const bytes = await saveBinary(result, path);
  ctx.out(ctx.json ? json({ file: path, bytes }) : `Saved ${path} (${bytes} bytes)`);
}

const printResult = (ctx: Context, result: unknown, command: OperationCommand) => {
  if (result === undefined) {
    if (!ctx.json) ctx.out(`Done: ${command.spec.description.toLowerCase()}.`);
    return;
  }
  ctx.out(ctx.json ? json(result) : render(result));
};

/** A finished task for people: its file and status, then the extracted values and line items. */
function extracted(task: TaskResult): string {
  const ids = [
    task.document_id !== null && task.document_id !== undefined ? `document ${task.document_id}` : '',
    task.task_id ? `task ${task.task_id}` : '',
  ].filter(Boolean);
  const heading = `${task.document_name ?? task.task_id ?? 'upload'}: ${task.status}${ids.length ? ` (${ids.join(', ')})` : ''}${
    task.status !== 'DONE' && task.status_message ? `: ${task.status_message}` : ''
  }`;
  if (task.status !== 'DONE') return heading;
  const general = generalFieldsOf(task);
  const lines = lineItemsOf(task);
  const width = Math.max(0, ...general.map((f) => f.name.length));
  const show = (v: unknown) =>
    v === null || v === undefined ? '' : typeof v === 'string' ? v : JSON.stringify(v);
  return [
    heading,
    ...(general.length
      ? general.map((f) => `  ${f.name.padEnd(width)}  ${show(f.value)}`)
      : ['  (no fields extracted)']),
    ...(lines.length
      ? [
          `  Line items (${lines.length}):`,
          ...table(
            lines.map((l) => Object.fromEntries(Object.entries(l).map(([k, v]) => [k, show(v.value)]))),
          )
            .split('\n')
            .map((l) => `    ${l}`),
        ]
      : []),
  ].join('\n');
}

async function runOperation(
  ctx: Context,
  command: OperationCommand,
  input: Record<string, unknown>,
  options: Record<string, string | boolean>,
) {
  const client = ctx.client();
  if (command.operation === 'upload_file' && options.wait === true) {
    const timeout = options.timeout === undefined ? undefined : Number(options.timeout);
    if (timeout !== undefined && !(timeout > 0))
      throw new UsageError(`--timeout takes seconds (got "${String(options.timeout)}")`);
    const { upload, tasks } = await client.uploadAndWait(input as never, {
      timeoutMs: timeout === undefined ? undefined : timeout * 1000,
    });
    if (ctx.json) ctx.out(json({ task_ids: upload.task_ids, tasks }));
    else ctx.out(tasks.map(extracted).join('\n\n'));
    return tasks.every((t) => t.status === 'DONE') ? EXIT.ok : EXIT.failure;
  }
  const result = await client.call(command.operation as OperationName, input as never);
  if (command.spec.output === 'binary') {
    const id = input.document_id ?? input.task_id;
    const fallback = command.operation === 'fetch_files_batch' ? 'documents.zip' : `document-${String(id)}`;
    await writeBinary(ctx, result as BinaryResult, options.output as string | undefined, fallback);
  } else printResult(ctx, result, command);
  // A 200 whose body says the key is not valid is a refused key, as in docex-sync check.
  const refused = command.operation === 'check_api_key' && (result as { valid: boolean }).valid === false;
  return refused ? EXIT.auth : EXIT.ok;
}

const REPORT_LABEL: Record<Action['kind'], string> = { create: '+', update: '~', delete: '-' };

function stringsOf(parsed: ParsedArgs, name: string): string[] {
  return parsed.flags
    .filter((f) => f.name === name)
    .map((f) => {
      if (typeof f.value !== 'string') throw new UsageError(`--${name} needs a value`);
      return f.value;
    });
}

function only(parsed: ParsedArgs, where: string, booleans: string[], values: string[]) {
  for (const f of parsed.flags)
    if (![...booleans, ...values].includes(f.name))
      throw new UsageError(`${where}: unknown flag --${f.name} (see ${where} --help)`);
  const options: Record<string, string | boolean> = {};
  for (const f of parsed.flags) options[f.name] = f.value;
  return options;
}

const TEMPLATES_HELP: Record<string, string> = {
  export: `Usage: docex templates export [--folder NAME ...] [-o FILE]

Writes folders, templates (with locales), fields and instructions as YAML, in a stable order and
without server ids. --folder (repeatable) keeps only those folders and their templates.`,
  plan: `Usage: docex templates plan FILE [--prune]

Shows what "apply" would create (+), change (~) and delete (-). Deletes (templates of the file's
folders, fields and instructions the file does not list) need --prune; without it, a plan that
would delete something exits 1.`,
  apply: `Usage: docex templates apply FILE [--prune] [--rerun [--override]]

Makes the account match FILE, in dependency order; a second apply changes nothing. Reports the
templates whose extraction changed; --rerun reruns their documents (--override forces it).`,
};

async function templatesCommand(io: Io, action: string | undefined, words: string[]): Promise<number> {
  const parsed = parseArgs(words, (n) => ['json', 'help', 'prune', 'rerun', 'override'].includes(n));
  const where = `docex templates ${action}`;
  const help = TEMPLATES_HELP[action ?? ''];
  const options = only(
    parsed,
    where,
    ['json', 'help', 'prune', 'rerun', 'override'],
    ['profile', 'config', 'folder', 'output'],
  );
  if (!help || options.help) {
    if (help) return (void io.stdout.write(`${help}\n`), EXIT.ok);
    const operations = resourceHelp('templates');
    io.stdout.write(
      `${operations}\n\nTemplates as code:\n${Object.values(TEMPLATES_HELP)
        .map((h) => `  ${h.split('\n')[0]!.replace('Usage: ', '')}`)
        .join('\n')}\n`,
    );
    return action ? EXIT.usage : EXIT.ok;
  }
  const ctx = contextFor(io, options);
  if (action === 'export') {
    if (parsed.positionals.length)
      throw new UsageError(`${where}: unexpected argument "${parsed.positionals[0]}"`);
    const folders = stringsOf(parsed, 'folder');
    const scope = folders.length ? new Set(folders) : undefined;
    const account = await readAccount(ctx.client(), { folders: scope });
    const missing = folders.filter((f) => !account.folders.some((a) => a.name === f));
    if (missing.length)
      throw new UsageError(`${where}: no folder named ${missing.map((m) => `"${m}"`).join(', ')}`);
    const yaml = setupToYaml(toSetup(account, scope));
    if (typeof options.output === 'string' && options.output !== '-') await writeFile(options.output, yaml);
    else io.stdout.write(yaml);
    return EXIT.ok;
  }
  const [file, ...extra] = parsed.positionals;
  if (!file || extra.length) throw new UsageError(`${where}: give one setup file (see ${where} --help)`);
  const located = readYamlFile(file, SetupSchema);
  checkSetup(located);
  const desired = located.data;
  const client = ctx.client();
  const account = await readAccount(client, {
    folders: new Set(desired.folders.map((f) => f.name)),
    templates: new Set(desired.templates.map((t) => t.name)),
  });
  const planned = makePlan(desired, account);
  if (action === 'plan') {
    ctx.out(ctx.json ? json(planned) : formatPlan(planned, options.prune === true));
    checkPrune(planned, options.prune === true);
    return EXIT.ok;
  }
  checkPrune(planned, options.prune === true);
  const { templateIds } = await applyPlan(client, planned, account, (a) => {
    if (!ctx.json)
      ctx.out(
        `${REPORT_LABEL[a.kind]} ${a.label}${a.what === 'field' || a.what === 'instruction' ? ` in template "${a.template}"` : ''}`,
      );
  });
  const reruns =
    options.rerun === true
      ? await rerunTemplates(client, planned.extractionChanged, templateIds, options.override === true)
      : [];
  if (ctx.json) {
    ctx.out(json({ applied: planned.actions, extractionChanged: planned.extractionChanged, reruns }));
    return EXIT.ok;
  }
  ctx.out(
    planned.actions.length
      ? `Applied ${planned.actions.length} change(s).`
      : 'No changes: the account matches the file.',
  );
  if (planned.extractionChanged.length)
    ctx.out(
      `Extraction changed for: ${planned.extractionChanged.map((t) => `"${t}"`).join(', ')}${
        options.rerun === true
          ? ''
          : ' (docex templates apply --rerun, or docex rerun --template ID, reruns their documents)'
      }`,
    );
  for (const r of reruns)
    ctx.out(
      `Rerun of "${r.template}": ${r.rerun} dispatched, ${r.not_rerun} not rerun, of ${r.documents} document(s)${r.failed ? `, ${r.failed} failed` : ''}.`,
    );
  return reruns.some((r) => r.failed) ? EXIT.failure : EXIT.ok;
}

const RERUN_HELP = `Usage: docex rerun [--template N] [--folder N] [--from YYYY-MM-DD] [--to YYYY-MM-DD]
                   [--ids N,N,...] [--all] [--override] [--dry-run]

Reruns every document that matches (fetch_documents, then rerun_documents in chunks of 500).
Give a filter, --ids, or --all for every document of the account. --override reruns even documents
whose template did not change.`;

async function rerunCommand(io: Io, words: string[]): Promise<number> {
  const booleans = ['json', 'help', 'override', 'dry-run', 'all'];
  const parsed = parseArgs(words, (n) => booleans.includes(n));
  const options = only(parsed, 'docex rerun', booleans, [
    'profile',
    'config',
    'template',
    'folder',
    'from',
    'to',
    'ids',
  ]);
  if (options.help) return (void io.stdout.write(`${RERUN_HELP}\n`), EXIT.ok);
  if (parsed.positionals.length)
    throw new UsageError(`docex rerun: unexpected argument "${parsed.positionals[0]}"`);
  const number = (name: string) => {
    const v = options[name];
    if (v === undefined) return undefined;
    if (typeof v !== 'string' || !/^\d+$/.test(v)) throw new UsageError(`--${name} must be a whole number`);
    return Number(v);
  };
  const filter = {
    template_id: number('template'),
    folder_id: number('folder'),
    start_date: options.from as string | undefined,
    end_date: options.to as string | undefined,
  };
  const given = Object.values(filter).some((v) => v !== undefined);
  if (!given && options.ids === undefined && options.all !== true)
    throw new UsageError(
      'docex rerun: give --template, --folder, --from/--to or --ids (or --all for every document)',
    );
  const ctx = contextFor(io, options);
  const client = ctx.client();
  const ids =
    typeof options.ids === 'string'
      ? options.ids.split(',').map((s) => {
          if (!/^\d+$/.test(s.trim())) throw new UsageError(`--ids takes whole numbers (got "${s}")`);
          return Number(s);
        })
      : await client.fetchDocuments(filter);
  if (options['dry-run'] === true) {
    ctx.out(
      ctx.json
        ? json({ documents: ids.length, doc_ids: ids })
        : `Dry run: ${ids.length} document(s) would be rerun.`,
    );
    return EXIT.ok;
  }
  const r = ids.length
    ? await client.rerunAll(ids, { override_extraction: options.override === true })
    : undefined;
  const report = {
    documents: ids.length,
    rerun: r?.rerun ?? 0,
    not_rerun: r?.not_rerun ?? 0,
    rerun_doc_ids: r?.rerun_doc_ids ?? [],
    errors: r?.errors ?? [],
    failed_chunks: r?.failedChunks.map((c) => ({ doc_ids: c.doc_ids, error: c.error.message })) ?? [],
  };
  if (ctx.json) ctx.out(json(report));
  else {
    ctx.out(
      `Rerun: ${report.rerun} dispatched, ${report.not_rerun} not rerun, of ${report.documents} document(s).`,
    );
    if (report.errors.length)
      ctx.out(table(report.errors.map((e) => ({ id: e.id, code: e.error_code, message: e.message }))));
    for (const c of report.failed_chunks)
      io.stderr.write(`docex rerun: ${c.doc_ids.length} document(s) not sent: ${c.error}\n`);
  }
  return report.failed_chunks.length ? EXIT.failure : EXIT.ok;
}

const LIST_HELP = {
  templates: `Usage: docex templates list [--folder N]

Lists every template of the account (or of folder N): id, name, folder, description.`,
  fields: `Usage: docex fields list TEMPLATE_ID

Lists the fields of a template in display order: id, name, type, format, position, description.`,
};

/** `templates list` and `fields list`: what the service answers as nested lists, as one table. */
async function listCommand(io: Io, resource: 'templates' | 'fields', words: string[]): Promise<number> {
  const where = `docex ${resource} list`;
  const parsed = parseArgs(words, (n) => ['json', 'help'].includes(n));
  const options = only(parsed, where, ['json', 'help'], ['profile', 'config', 'folder']);
  if (options.help) return (void io.stdout.write(`${LIST_HELP[resource]}\n`), EXIT.ok);
  const ctx = contextFor(io, options);
  const whole = (value: unknown, what: string) => {
    if (typeof value !== 'string' || !/^\d+$/.test(value))
      throw new UsageError(`${where}: ${what} must be a whole number (got "${String(value)}")`);
    return Number(value);
  };
  if (resource === 'templates') {
    if (parsed.positionals.length)
      throw new UsageError(`${where}: unexpected argument "${parsed.positionals[0]}"`);
    const folder = options.folder === undefined ? undefined : whole(options.folder, '--folder');
    const account = await readAccount(ctx.client(), { folders: new Set() });
    const folders = account.folders.filter((f) => folder === undefined || f.id === folder);
    if (folder !== undefined && folders.length === 0) throw new UsageError(`${where}: no folder ${folder}`);
    const rows = folders.flatMap((f) =>
      f.templates.map((t) => ({ id: t.id, name: t.name, folder_id: f.id, folder: f.name })),
    );
    ctx.out(ctx.json ? json(rows) : table(rows));
    return EXIT.ok;
  }
  const [id, ...extra] = parsed.positionals;
  if (id === undefined || extra.length)
    throw new UsageError(`${where}: give one TEMPLATE_ID (see ${where} --help)`);
  const client = ctx.client();
  const template = await client.fetchTemplate({ template_id: whole(id, 'TEMPLATE_ID') });
  const fields = await Promise.all(
    (template.field_ids ?? []).map((field_id) => client.fetchField({ field_id })),
  );
  const rows = fields
    .sort((a, b) => (a.position ?? Infinity) - (b.position ?? Infinity) || a.id - b.id)
    .map((f) => ({
      id: f.id,
      name: f.name,
      type: f.type,
      format: f.format,
      position: f.position,
      desc: f.desc,
    }));
  ctx.out(ctx.json ? json(rows) : table(rows));
  return EXIT.ok;
}

async function dispatch(argv: string[], io: Io): Promise<number> {
  const [first, second, ...rest] = argv;
  if (!first || first === '--help' || first === '-h' || first === 'help') {
    io.stdout.write(`${mainHelp()}\n`);
    return first ? EXIT.ok : EXIT.usage;
  }
  if (first === '--version' || first === '-v' || first === '-V' || first === 'version') {
    io.stdout.write(`docex ${packageJson.version}\n`);
    return EXIT.ok;
  }
  if (first === 'completion') {
    if (second !== 'bash' && second !== 'zsh') throw new UsageError('docex completion: give bash or zsh');
    io.stdout.write(completionScript(second));
    return EXIT.ok;
  }
  if (first === 'rerun') return rerunCommand(io, argv.slice(1));
  if ((first === 'templates' || first === 'fields') && second === 'list') return listCommand(io, first, rest);
  if (first === 'templates' && ['export', 'plan', 'apply'].includes(second ?? ''))
    return templatesCommand(io, second, rest);
  const words = first === 'upload' ? ['tasks', 'upload', ...argv.slice(1)] : argv;
  const found = findOperationCommand(words);
  if (!found) {
    if (RESOURCE_COMMANDS.includes(first)) {
      if (second === undefined || second === '--help' || second === '-h') {
        io.stdout.write(`${resourceHelp(first)}\n`);
        if (first === 'templates' || first === 'fields')
          io.stdout.write(`\nAlso: ${LIST_HELP[first].split('\n')[0]!.replace('Usage: ', '')}\n`);
        if (first === 'templates')
          io.stdout.write(`\nTemplates as code: export, plan, apply (docex templates export --help)\n`);
        return second ? EXIT.ok : EXIT.usage;
      }
      throw new UsageError(
        `docex ${first}: unknown action "${second}" (actions: ${actionsOf(first)
          .map((c) => c.action)
          .join(
            ', ',
          )}${first === 'templates' ? ', list, export, plan, apply' : first === 'fields' ? ', list' : ''})`,
      );
    }
    throw new UsageError(`unknown command "${first}" (see docex --help)`);
  }
  const { command, used } = found;
  const extras = extrasFor(command);
  const parsed = parseArgs(words.slice(used), booleanTest(command, extras));
  if (parsed.flags.some((f) => f.name === 'help')) {
    const extra: Array<[string, string]> =
      command.operation === 'upload_file'
        ? [
            [
              '--wait',
              'wait for the tasks to finish and print their results (exit 1 when one did not end DONE)',
            ],
            ['--timeout SECONDS', 'with --wait: give up after this long (default 900)'],
          ]
        : [];
    io.stdout.write(`${operationHelp(command, extra)}\n`);
    return EXIT.ok;
  }
  const { input, options } = inputOf(command, parsed, extras);
  return runOperation(contextFor(io, options), command, input, options);
}

export async function runDocex(argv: string[], io: Io): Promise<number> {
  try {
    return await dispatch(argv, io);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    // Usage errors already start with the command ("docex rerun: ..."); others get the program's name.
    io.stderr.write(message.startsWith('docex ') ? `${message}\n` : `docex: ${message}\n`);
    if (io.env.DOCEX_DEBUG && error instanceof Error) io.stderr.write(`${error.stack}\n`);
    if (error instanceof UsageError || error instanceof DocexInputError || error instanceof ConfigError)
      return EXIT.usage;
    if (error instanceof PlanError) return EXIT.failure;
    return exitCodeFor(error);
  }
}
