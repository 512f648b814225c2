/**
 * The operation table seen from the shell: every operation becomes `docex <resource> <action>`,
 * its parameters become flags, and its help is made from the table's descriptions. Pure: nothing
 * here reads files or talks to the service.
 */
import {
  OPERATIONS,
  OPERATION_NAMES,
  type OperationName,
  type OperationSpec,
  type ParamSpec,
  type Resource,
} from '@docex/shared';

export class UsageError extends Error {}

export interface OperationCommand {
  resource: string;
  action: string;
  operation: OperationName;
  spec: OperationSpec;
  /** Parameters that may be given without a flag, in order (a `file[]` one takes all that remain). */
  positional: ParamSpec[];
}

export const resourceCommand = (resource: Resource) =>
  resource === 'Account' ? 'account' : `${resource.toLowerCase()}s`;

const ACTION_NAMES: Record<string, string> = {
  'Get Many': 'list',
  'Download ZIP': 'download',
  'Check API Key': 'check',
};
/** "Get Data" → data, "Download File" → download-file, "Upload CSV" → upload-csv. */
export const actionCommand = (action: string) =>
  ACTION_NAMES[action] ??
  action
    .toLowerCase()
    .replace(/^get (?=.)/, '')
    .replace(/\s+/g, '-');

const isIdParam = (spec: OperationSpec, p: ParamSpec) =>
  /_id$/.test(p.name) &&
  (p.kind === 'integer' || p.kind === 'string') &&
  (p.required === true || spec.exactlyOneOf?.[0] === p.name);

function positionalOf(spec: OperationSpec): ParamSpec[] {
  const id = spec.params.find((p) => isIdParam(spec, p));
  const file = spec.params.find((p) => p.kind === 'file' || p.kind === 'file[]');
  return [id, file].filter((p): p is ParamSpec => p !== undefined);
}

export const OPERATION_COMMANDS: OperationCommand[] = OPERATION_NAMES.map((operation) => {
  const spec = OPERATIONS[operation] as OperationSpec;
  return {
    resource: resourceCommand(spec.resource),
    action: actionCommand(spec.action),
    operation,
    spec,
    positional: positionalOf(spec),
  };
});

/** `docex folders list`, `docex fetch_all_folders` (the API name works too). */
export function findOperationCommand(
  words: readonly string[],
): { command: OperationCommand; used: number } | undefined {
  const [first, second] = words;
  const byApiName = OPERATION_COMMANDS.find((c) => c.operation === first);
  if (byApiName) return { command: byApiName, used: 1 };
  const command = OPERATION_COMMANDS.find((c) => c.resource === first && c.action === second);
  return command ? { command, used: 2 } : undefined;
}

export const RESOURCE_COMMANDS = [...new Set(OPERATION_COMMANDS.map((c) => c.resource))];
export const actionsOf = (resource: string) => OPERATION_COMMANDS.filter((c) => c.resource === resource);

/** Flags every command understands, beside its own parameters. */
export const COMMON_FLAGS = [
  ['--json', 'print JSON (the default when the output is not a terminal)'],
  [
    '--profile NAME',
    "account profile from the config file (default: DOCEX_PROFILE, then the file's default)",
  ],
  ['--config FILE', 'config file (default: DOCEX_CONFIG, then ~/.config/docex/config.yaml)'],
  ['--debug', 'one line per HTTP request on stderr (also DOCEX_DEBUG=http); no key, no proxy password'],
  ['-h, --help', 'this help'],
] as const;

/** The flag spellings of a parameter: --template_id, --template-id, and --template when it is unambiguous. */
export function flagNamesOf(spec: OperationSpec, p: ParamSpec): string[] {
  const names = [p.name, p.name.replace(/_/g, '-')];
  const stem = p.name.replace(/_id$/, '');
  if (stem !== p.name && !spec.params.some((o) => o.name === stem)) names.push(stem);
  if (p.kind === 'integer[]' && spec.params.find((o) => o.kind === 'integer[]') === p) names.push('ids');
  return [...new Set(names)];
}

const KIND_HINT: Record<ParamSpec['kind'], string> = {
  integer: 'N',
  string: 'TEXT',
  boolean: '',
  date: 'YYYY-MM-DD',
  datetime: 'ISO-TIME',
  'integer[]': 'N,N,...',
  'string[]': 'A,B,...',
  metadata: 'TEXT|JSON',
  file: 'FILE',
  'file[]': 'FILE...',
};

/** Help fits a terminal of this many columns (a value list such as --format's wraps). */
export const HELP_WIDTH = 100;
/** The left column's widest entry; a longer one puts its description on the lines below. */
const LEFT_MAX = 34;

/** Words of `text` on lines of at most `width`; breaks after a space, a "|" or a ",". */
export function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const token of text.split(/(?<=[ |,])/)) {
    if (line && (line + token).trimEnd().length > width) {
      lines.push(line.trimEnd());
      line = token.trimStart();
    } else line += token;
  }
  if (line.trim()) lines.push(line.trimEnd());
  return lines;
}

/** Two columns (flag or command, what it does), wrapped to HELP_WIDTH. */
const pad = (rows: ReadonlyArray<readonly [string, string]>) => {
  const left = Math.min(LEFT_MAX, Math.max(...rows.map(([a]) => a.length)));
  const indent = ' '.repeat(2 + left + 2);
  const right = HELP_WIDTH - indent.length;
  return rows
    .flatMap(([a, b]) => {
      const description = wrap(b, right);
      if (a.length <= left)
        return [
          `  ${a.padEnd(left)}  ${description[0] ?? ''}`.trimEnd(),
          ...description.slice(1).map((d) => indent + d),
        ];
      // Too wide for the column: the flag on its own lines (its continuations indented), then the text.
      const [first = '', ...more] = wrap(a, HELP_WIDTH - 2);
      const rest = more.flatMap((m) => wrap(m, HELP_WIDTH - 6)).map((m) => `      ${m}`);
      return [`  ${first}`, ...rest, ...description.map((d) => indent + d)];
    })
    .join('\n');
};

function paramLine(spec: OperationSpec, p: ParamSpec): [string, string] {
  const flags = flagNamesOf(spec, p)
    .filter((n) => n !== p.name.replace(/_/g, '-') || n === p.name)
    .map((n) => `--${n}`)
    .join(', ');
  const hint = p.values ? p.values.map((v) => (v.includes(' ') ? `"${v}"` : v)).join('|') : KIND_HINT[p.kind];
  const notes = [
    p.required ? 'required' : '',
    p.default !== undefined && p.kind !== 'boolean' ? `default ${String(p.default)}` : '',
    p.nullable && p.kind !== 'boolean' ? `--no-${p.name} sends null` : '',
  ].filter(Boolean);
  return [
    `${flags}${hint ? ` ${hint}` : ''}`,
    `${p.description}${notes.length ? ` (${notes.join('; ')})` : ''}`,
  ];
}

export function usageOf(command: OperationCommand): string {
  const positional = command.positional.map((p) =>
    p.kind === 'file[]'
      ? `${p.name.toUpperCase()}...`
      : p.required
        ? p.name.toUpperCase()
        : `[${p.name.toUpperCase()}]`,
  );
  return `docex ${command.resource} ${command.action}${positional.length ? ` ${positional.join(' ')}` : ''} [flags]`;
}

export function operationHelp(
  command: OperationCommand,
  extra: ReadonlyArray<readonly [string, string]> = [],
): string {
  const { spec } = command;
  const rules = [
    spec.exactlyOneOf ? `Give exactly one of ${spec.exactlyOneOf.map((n) => `--${n}`).join(', ')}.` : '',
    spec.atLeastOneOf ? `Give at least one of ${spec.atLeastOneOf.map((n) => `--${n}`).join(', ')}.` : '',
    spec.output === 'binary'
      ? 'Writes the file to -o FILE (- for stdout; default: the name the service sends).'
      : '',
  ].filter(Boolean);
  const params = spec.params.map((p) => paramLine(spec, p));
  const binary: Array<[string, string]> =
    spec.output === 'binary' ? [['-o, --output FILE', 'where to write the download']] : [];
  return [
    ...wrap(`${spec.description}  (${spec.method} ${spec.path}, operation ${spec.name})`, HELP_WIDTH),
    '',
    `Usage: ${usageOf(command)}`,
    ...(rules.length ? ['', ...rules] : []),
    '',
    'Flags:',
    pad([...params, ...binary, ...extra, ...COMMON_FLAGS]),
  ].join('\n');
}

/** Shortcuts and templates-as-code commands: name, one-line summary (their help is in cli.ts). */
export const EXTRA_COMMANDS: ReadonlyArray<readonly [string, string]> = [
  ['upload FILE... [--template N | --folder N] [--wait]', 'upload files; --wait waits for the results'],
  [
    'rerun [--template N] [--folder N] [--from D] [--to D] [--override] [--dry-run]',
    'rerun every matching document',
  ],
  ['templates list [--folder N]', 'list the templates, with their folders'],
  ['fields list TEMPLATE_ID', "list a template's fields in display order"],
  ['templates export [--folder NAME]', 'write folders, templates, fields and instructions as YAML'],
  ['templates plan FILE [--prune]', 'show what apply would change'],
  ['templates apply FILE [--prune] [--rerun]', 'make the account match FILE'],
  ['completion bash|zsh', 'print a shell completion script'],
  ['version, --version, -v', 'print the version'],
];

export function mainHelp(): string {
  const resources = RESOURCE_COMMANDS.map(
    (r) =>
      [
        r,
        actionsOf(r)
          .map((c) => c.action)
          .join(', '),
      ] as const,
  );
  return `docex — every operation of the Document Extraction Service from the shell.

Usage: docex <resource> <action> [ARGS] [--param value ...]
       docex <command> [ARGS] [flags]

Resources and their actions:
${pad(resources)}

Commands:
${pad(EXTRA_COMMANDS)}

Global flags:
${pad(COMMON_FLAGS)}

Tables on a terminal, JSON when piped or with --json. The API key comes from DOCEX_API_KEY or the
profile's api_key_file; the base URL from the profile's base_url or DOCEX_BASE_URL.
Exit codes: 0 ok, 1 failure, 2 bad usage or config, 3 API key refused, 4 service unreachable,
7 host name not resolved, 8 connection refused, 9 proxy unreachable or refusing,
10 proxy authentication required, 11 certificate from an unknown issuer,
12 certificate name mismatch, 13 certificate expired.
Run "docex <resource> <action> --help" for an action's flags.`;
}

export function resourceHelp(resource: string): string {
  return `Usage: docex ${resource} <action> [flags]\n\nActions:\n${pad(
    actionsOf(resource).map((c) => [c.action, c.spec.description] as const),
  )}\n\nRun "docex ${resource} <action> --help" for an action's flags.`;
}
