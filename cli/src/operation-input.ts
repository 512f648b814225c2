/**
 * An operation's command line, parsed by the one parser (@docex/cli-kit/args) against its flags
 * (commands.ts, flagsOf), back as the input the client expects. Pure.
 */
import type { ParamSpec } from '@docex/shared';
import type { FlagValue, Options } from '@docex/cli-kit/args';
import { UsageError } from '@docex/cli-kit/errors';
import type { OperationCommand } from './commands.ts';

function integer(name: string, v: string): number {
  if (!/^-?\d+$/.test(v.trim())) throw new UsageError(`--${name} must be a whole number (got "${v}")`);
  return Number(v);
}

const list = (v: string) =>
  v
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

/** One flag's text → the value the client expects for that parameter (`before`: a list so far). */
function valueOf(p: ParamSpec, v: string, before: unknown): unknown {
  const earlier = Array.isArray(before) ? before : [];
  switch (p.kind) {
    case 'integer':
      return integer(p.name, v);
    case 'integer[]':
      return [...earlier, ...list(v).map((s) => integer(p.name, s))];
    case 'string[]':
      return [...earlier, ...list(v)];
    case 'file':
      return { path: v };
    case 'file[]':
      return [...earlier, { path: v }];
    default:
      return v;
  }
}

/** A parsed flag (paramFlag: a switch's boolean, a value's text, a list's texts, --no-x's false). */
function paramValue(p: ParamSpec, v: FlagValue): unknown {
  if (typeof v === 'boolean') {
    if (p.kind === 'boolean') return v;
    if (!p.nullable) throw new UsageError(`--no-${p.name}: ${p.name} cannot be null`);
    return null;
  }
  return (Array.isArray(v) ? v : [v]).reduce<unknown>((before, text) => valueOf(p, text, before), undefined);
}

/**
 * The operation's input from the parsed flags and positional words of `docex <where>`: a parameter's
 * positional word is taken when its flag was not given. Surplus words are usage errors.
 */
export function inputOf(command: OperationCommand, options: Options, where: string): Record<string, unknown> {
  const input: Record<string, unknown> = {};
  for (const p of command.spec.params) {
    const v = options.values[p.name];
    if (v !== undefined) input[p.name] = paramValue(p, v);
  }
  const words = [...options.args];
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
  return input;
}
