/**
 * The operation table seen from the shell: every operation becomes `docex <resource> <action>` (a
 * row of docex's table made by operation-rows.ts, its Command by operation-command.ts), its
 * parameters become flags, and its help is made from the table's descriptions. Pure: nothing here
 * reads files or talks to the service; it registers nothing and imports no command.
 */
import {
  OPERATIONS,
  OPERATION_NAMES,
  type OperationName,
  type OperationSpec,
  type ParamSpec,
  type Resource,
} from '@docex/shared';
import { flagRows, type FlagSpec } from '@docex/cli-kit/args';
import { columns as pad, wrap, HELP_WIDTH } from '@docex/cli-kit/help';
import { DOCEX_GLOBAL_FLAGS as GLOBAL_FLAGS } from '@docex/cli-kit/flags';

export { HELP_WIDTH, wrap } from '@docex/cli-kit/help';

export { UsageError } from '@docex/cli-kit/errors';

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

export const RESOURCE_COMMANDS = [...new Set(OPERATION_COMMANDS.map((c) => c.resource))];
export const actionsOf = (resource: string) => OPERATION_COMMANDS.filter((c) => c.resource === resource);

/** Flags every command understands, beside its own parameters (table.ts names them once). */
export const COMMON_FLAGS = flagRows(GLOBAL_FLAGS);

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

/** What a parameter's value looks like in help: its values, or its kind's placeholder. */
const hintOf = (p: ParamSpec) =>
  p.values ? p.values.map((v) => (v.includes(' ') ? `"${v}"` : v)).join('|') : KIND_HINT[p.kind];

/** Flags beside the parameters (in help and completion too): --wait and --timeout on upload, -o on downloads. */
const UPLOAD_FLAGS: readonly FlagSpec[] = [
  {
    name: 'wait',
    help: 'wait for the tasks to finish and print their results (exit 1 when one did not end DONE)',
  },
  { name: 'timeout', value: 'SECONDS', help: 'with --wait: give up after this long (default 900)' },
];
const BINARY_FLAGS: readonly FlagSpec[] = [
  { name: 'output', short: 'o', value: 'FILE', help: 'where to write the download' },
];

export const extraFlagsOf = (command: OperationCommand): readonly FlagSpec[] =>
  command.operation === 'upload_file' ? UPLOAD_FLAGS : command.spec.output === 'binary' ? BINARY_FLAGS : [];

/**
 * A parameter as a flag: its API name, the other spellings as aliases (--template-id, --template),
 * a list given as often as wanted, and `--no-x` for every value (null where the table allows it).
 */
function paramFlag(command: OperationCommand, p: ParamSpec): FlagSpec {
  const [name, ...aliases] = flagNamesOf(command.spec, p);
  return {
    name: name!,
    aliases,
    help: p.description,
    ...(p.kind === 'boolean' ? {} : { value: hintOf(p), negatable: true }),
    ...(p.kind.endsWith('[]') ? { repeatable: true } : {}),
  };
}

/** Every flag of the operation's command: its parameters, then --wait/--timeout or -o. */
export const flagsOf = (command: OperationCommand): FlagSpec[] => [
  ...command.spec.params.map((p) => paramFlag(command, p)),
  ...extraFlagsOf(command),
];

function paramLine(spec: OperationSpec, p: ParamSpec): [string, string] {
  const flags = flagNamesOf(spec, p)
    .filter((n) => n !== p.name.replace(/_/g, '-') || n === p.name)
    .map((n) => `--${n}`)
    .join(', ');
  const hint = hintOf(p);
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

export function operationHelp(command: OperationCommand): string {
  const { spec } = command;
  const rules = [
    spec.exactlyOneOf ? `Give exactly one of ${spec.exactlyOneOf.map((n) => `--${n}`).join(', ')}.` : '',
    spec.atLeastOneOf ? `Give at least one of ${spec.atLeastOneOf.map((n) => `--${n}`).join(', ')}.` : '',
    spec.output === 'binary'
      ? 'Writes the file to -o FILE (- for stdout; default: the name the service sends).'
      : '',
  ].filter(Boolean);
  const params = spec.params.map((p) => paramLine(spec, p));
  return [
    ...wrap(`${spec.description}  (${spec.method} ${spec.path}, operation ${spec.name})`, HELP_WIDTH),
    '',
    `Usage: ${usageOf(command)}`,
    ...(rules.length ? ['', ...rules] : []),
    '',
    'Flags:',
    pad([...params, ...flagRows(extraFlagsOf(command)), ...COMMON_FLAGS]),
  ].join('\n');
}

export function resourceHelp(resource: string): string {
  return `Usage: docex ${resource} <action> [flags]\n\nActions:\n${pad(
    actionsOf(resource).map((c) => [c.action, c.spec.description] as const),
  )}\n\nRun "docex ${resource} <action> --help" for an action's flags.`;
}
