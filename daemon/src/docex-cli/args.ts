/** Command-line words → flags and an operation's input, checked against the operation table. Pure. */
import type { ParamSpec } from '@docex/shared';
import { splitWords, truthy, type SplitWords } from '../common/args.ts';
import { UsageError } from '../common/errors.ts';
import { flagNamesOf, type OperationCommand } from './commands.ts';
import { GLOBAL_FLAGS } from './table.ts';

export type { Flag } from '../common/args.ts';
export type ParsedArgs = SplitWords;

const SHORT: Record<string, string> = { o: 'output', h: 'help', c: 'config' };

/** Splits words into positionals and flags (common/args.ts), with docex's -o and -h. */
export const parseArgs = (words: readonly string[], isBoolean: (name: string) => boolean): ParsedArgs =>
  splitWords(words, isBoolean, SHORT);

function integer(name: string, v: string): number {
  if (!/^-?\d+$/.test(v.trim())) throw new UsageError(`--${name} must be a whole number (got "${v}")`);
  return Number(v);
}

const list = (v: string) =>
  v
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

/** One flag's text → the value the client expects for that parameter. */
function valueOf(p: ParamSpec, v: string | boolean, previous: unknown): unknown {
  if (p.kind === 'boolean') return truthy(p.name, v);
  if (v === false) {
    if (!p.nullable) throw new UsageError(`--no-${p.name}: ${p.name} cannot be null`);
    return null;
  }
  if (v === true) throw new UsageError(`--${p.name} needs a value`);
  const before = Array.isArray(previous) ? previous : [];
  switch (p.kind) {
    case 'integer':
      return integer(p.name, v);
    case 'integer[]':
      return [...before, ...list(v).map((s) => integer(p.name, s))];
    case 'string[]':
      return [...before, ...list(v)];
    case 'file':
      return { path: v };
    case 'file[]':
      return [...before, { path: v }];
    default:
      return v;
  }
}

/** Flags that are not parameters of the operation but are understood by the command that runs it. */
export interface Extras {
  booleans: readonly string[];
  values: readonly string[];
}

/** The global flags (table.ts) as names: the switches and the flags with a value. */
export const GLOBAL_EXTRAS: Extras = {
  booleans: GLOBAL_FLAGS.filter((f) => f.value === undefined).map((f) => f.name),
  values: GLOBAL_FLAGS.filter((f) => f.value !== undefined).map((f) => f.name),
};
const UPLOAD_EXTRAS: Extras = {
  booleans: [...GLOBAL_EXTRAS.booleans, 'wait'],
  values: [...GLOBAL_EXTRAS.values, 'timeout'],
};
const BINARY_EXTRAS: Extras = {
  booleans: GLOBAL_EXTRAS.booleans,
  values: [...GLOBAL_EXTRAS.values, 'output'],
};

/** The flags a command takes beside its parameters: --wait on upload, -o on downloads. */
export const extrasFor = (command: OperationCommand): Extras =>
  command.operation === 'upload_file'
    ? UPLOAD_EXTRAS
    : command.spec.output === 'binary'
      ? BINARY_EXTRAS
      : GLOBAL_EXTRAS;

export function booleanTest(command: OperationCommand | undefined, extras: Extras) {
  return (name: string) =>
    extras.booleans.includes(name) ||
    (command?.spec.params.some((p) => p.kind === 'boolean' && flagNamesOf(command.spec, p).includes(name)) ??
      false);
}

/**
 * The operation's input from positionals and flags; other known flags come back in `options`.
 * Unknown flags and surplus words are usage errors that name the command.
 */
export function inputOf(
  command: OperationCommand,
  parsed: ParsedArgs,
  extras: Extras,
): { input: Record<string, unknown>; options: Record<string, string | boolean> } {
  const input: Record<string, unknown> = {};
  const options: Record<string, string | boolean> = {};
  const where = `docex ${command.resource} ${command.action}`;
  for (const flag of parsed.flags) {
    const param = command.spec.params.find((p) => flagNamesOf(command.spec, p).includes(flag.name));
    if (param) input[param.name] = valueOf(param, flag.value, input[param.name]);
    else if (extras.booleans.includes(flag.name) || extras.values.includes(flag.name))
      options[flag.name] = flag.value;
    else throw new UsageError(`${where}: unknown flag --${flag.name} (see ${where} --help)`);
  }
  const words = [...parsed.positionals];
  for (const p of command.positional) {
    if (words.length === 0) break;
    if (p.kind === 'file[]') {
      for (const w of words.splice(0)) input[p.name] = valueOf(p, w, input[p.name]);
    } else if (
      input[p.name] === undefined &&
      !(command.spec.exactlyOneOf?.some((n) => input[n] !== undefined) ?? false)
    ) {
      input[p.name] = valueOf(p, words.shift()!, undefined);
    }
  }
  if (words.length) throw new UsageError(`${where}: unexpected argument "${words[0]}" (see ${where} --help)`);
  return { input, options };
}
