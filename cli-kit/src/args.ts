/**
 * The one argument parser of both binaries. `splitWords` turns words into positionals and flags;
 * `parseFlags` checks them against a command's flag specs (old spellings as hidden aliases, short
 * forms, repeatable flags) and says every mistake as a UsageError naming the command. Pure.
 */
import { UsageError } from './errors.ts';
import { didYouMean } from './suggest.ts';

export interface Flag {
  name: string;
  /** `--x v` / `--x=v` → 'v'; a boolean `--x` → true; `--no-x` → false. */
  value: string | boolean;
}
export interface SplitWords {
  positionals: string[];
  flags: Flag[];
}

/**
 * Splits words into positionals and flags; `isBoolean(name)` says which flags take no value,
 * `shorts` maps one-letter flags to their long names.
 */
export function splitWords(
  words: readonly string[],
  isBoolean: (name: string) => boolean,
  shorts: Readonly<Record<string, string>> = {},
): SplitWords {
  const positionals: string[] = [];
  const flags: Flag[] = [];
  for (let i = 0; i < words.length; i++) {
    const word = words[i]!;
    if (word === '--') {
      positionals.push(...words.slice(i + 1));
      break;
    }
    const long = /^--([^=]+)(?:=(.*))?$/s.exec(word);
    const short = /^-([a-zA-Z])$/.exec(word);
    if (!long && !short) {
      positionals.push(word);
      continue;
    }
    const name = long ? long[1]! : (shorts[short![1]!] ?? short![1]!);
    const inline = long?.[2];
    if (inline !== undefined) flags.push({ name, value: inline });
    else if (isBoolean(name)) flags.push({ name, value: true });
    else if (name.startsWith('no-')) flags.push({ name: name.slice(3), value: false });
    else {
      const next = words[i + 1];
      if (next === undefined) throw new UsageError(`--${name} needs a value`);
      flags.push({ name, value: next });
      i++;
    }
  }
  return { positionals, flags };
}

/** `--x=yes` / `--x=false` for a boolean flag. */
export function truthy(name: string, v: string | boolean): boolean {
  if (typeof v === 'boolean') return v;
  if (/^(true|yes|1)$/i.test(v)) return true;
  if (/^(false|no|0)$/i.test(v)) return false;
  throw new UsageError(`--${name} takes true or false (got "${v}")`);
}

export interface FlagSpec {
  /** The one spelling help shows, e.g. "template". */
  name: string;
  /** A one-letter form, e.g. "c" for --config. */
  short?: string;
  /** The value's placeholder in help ("N", "FILE"); none: the flag is a switch. */
  value?: string;
  help: string;
  /** Old spellings still understood and never shown in help: scripts use them. */
  aliases?: readonly string[];
  /** Given more than once, every value is kept (in order). */
  repeatable?: boolean;
  /** A value flag that `--no-x` turns off: its value is then false (docex: the parameter sent as null). */
  negatable?: boolean;
}

export type FlagValue = string | boolean | string[];
/** What a command receives: its flags by their one name (aliases resolved), and its positional words. */
export interface Options {
  values: Record<string, FlagValue | undefined>;
  args: string[];
}

/**
 * `words` checked against `specs` for the command `where` ("docex rerun"): unknown flags get a
 * "did you mean", a value flag needs its value, and more than `maxArgs` positionals is a mistake.
 */
export function parseFlags(
  words: readonly string[],
  specs: readonly FlagSpec[],
  where: string,
  maxArgs: number = 0,
): Options {
  const byName = new Map<string, FlagSpec>();
  const shorts: Record<string, string> = {};
  for (const spec of specs) {
    for (const name of [spec.name, ...(spec.aliases ?? [])]) byName.set(name, spec);
    if (spec.short) shorts[spec.short] = spec.name;
  }
  let split: SplitWords;
  try {
    // Only a known value flag takes the next word: an unknown one is reported as unknown, not as
    // missing its value.
    split = splitWords(words, (name) => byName.get(name)?.value === undefined, shorts);
  } catch (error) {
    throw error instanceof UsageError ? new UsageError(`${where}: ${error.message}`) : error;
  }
  const values: Options['values'] = {};
  for (const given of split.flags) {
    const negated =
      given.name.startsWith('no-') && !byName.has(given.name) && byName.has(given.name.slice(3));
    const flag = negated ? { name: given.name.slice(3), value: false } : given;
    const spec = byName.get(flag.name);
    if (!spec) {
      // Every spelling a command accepts, its other ones too (docex's --template for --template_id):
      // a typo of any of them is close to the one meant.
      const known = specs.flatMap((s) => [s.name, ...(s.aliases ?? [])].map((n) => `--${n}`));
      // A one-letter name was given as -x (every long name is longer).
      const given = flag.name.length === 1 ? `-${flag.name}` : `--${flag.name}`;
      throw new UsageError(
        `${where}: unknown flag ${given}${didYouMean(given, known)} (see ${where} --help)`,
      );
    }
    if (spec.value === undefined) {
      values[spec.name] = truthy(spec.name, flag.value);
      continue;
    }
    if (flag.value === false && spec.negatable) {
      values[spec.name] = false;
      continue;
    }
    if (typeof flag.value !== 'string') throw new UsageError(`${where}: --${spec.name} needs a value`);
    const before = values[spec.name];
    values[spec.name] = spec.repeatable ? [...(Array.isArray(before) ? before : []), flag.value] : flag.value;
  }
  if (split.positionals.length > maxArgs)
    throw new UsageError(
      `${where}: unexpected argument "${split.positionals[maxArgs]}" (see ${where} --help)`,
    );
  return { values, args: split.positionals };
}

/** Help rows for flags: the one spelling each, never an alias. */
export const flagRows = (specs: readonly FlagSpec[]): Array<[string, string]> =>
  specs.map((s) => [`${s.short ? `-${s.short}, ` : ''}--${s.name}${s.value ? ` ${s.value}` : ''}`, s.help]);

/** A flag's text value (undefined when not given). */
export const text = (options: Options, name: string): string | undefined => {
  const v = options.values[name];
  return typeof v === 'string' ? v : undefined;
};
/** A switch: true only when given (and not --no-x / --x=false). */
export const isOn = (options: Options, name: string): boolean => options.values[name] === true;
/** Every value of a repeatable flag. */
export const texts = (options: Options, name: string): string[] => {
  const v = options.values[name];
  return Array.isArray(v) ? v : typeof v === 'string' ? [v] : [];
};
