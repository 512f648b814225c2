/**
 * One way to write a command, for both binaries (docs/architecture.md, "Commands"): a command is a
 * file exporting a `Command` (its usage, flags and `run(options, io) -> exit code`), and a row in its
 * program's table names it and loads it on use. Everything a command touches outside itself comes in
 * through `io` (streams, environment, clock; a program adds its client factory), so tests run it
 * in-process. This module and the tables import nothing heavy: --version, --help and usage mistakes
 * are answered before any command's work is loaded.
 */
import { flagRows, parseFlags, type FlagSpec, type Options } from './args.ts';
import { UsageError } from './errors.ts';
import { EXIT } from './exit-codes.ts';
import { columns } from './help.ts';
import { HELP_WORDS, VERSION_WORDS } from './flags.ts';
import { didYouMean } from './suggest.ts';

/** The world a command sees. Tests pass their own; the binaries pass the process's (processIo). */
export interface Io {
  stdout: NodeJS.WritableStream & { isTTY?: boolean };
  stderr: NodeJS.WritableStream & { isTTY?: boolean };
  env: NodeJS.ProcessEnv;
  /** Where a yes/no question is answered (default: process.stdin). */
  stdin?: NodeJS.ReadableStream & { isTTY?: boolean };
  /** Wall-clock milliseconds (default: Date.now). */
  now?: () => number;
}

export const processIo = (): Io => ({
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
  // Made when a command first reads it: process.stdin opens a stream on fd 0 (for a file, an
  // fs.ReadStream and with it fs/promises and readline, ~10 ms), which --version never needs.
  get stdin() {
    return process.stdin;
  },
  now: Date.now,
});

export interface Command<I extends Io = Io> {
  /** The words that name it after the program's name: "rerun", "templates export". */
  name: string;
  /** After "Usage: ", e.g. "docex-sync retry --config FILE (--all | NAME_OR_PATTERN ...)". */
  usage: string;
  /** What it does, for its --help (lines of at most HELP_WIDTH). */
  description: string;
  /** Its own flags; the program's global flags are added. */
  flags: readonly FlagSpec[];
  /** How many positional words it takes (default none). */
  maxArgs?: number;
  /**
   * Its whole --help text, when the usual layout (usage, description, flags) is not the right one:
   * docex's commands made from the operation table say their method, path and rules first.
   */
  help?(): string;
  run(options: Options, io: I): Promise<number>;
}

/** A row of a program's table: enough for the main help, and the command's file loaded on use. */
export interface CommandRow<I extends Io = Io> {
  name: string;
  summary: string;
  load(): Promise<Command<I>>;
}

export interface Program<I extends Io = Io> {
  name: string;
  version: string;
  mainHelp(): string | Promise<string>;
  commands: ReadonlyArray<CommandRow<I>>;
  /** Flags every command takes (--help among them). */
  globalFlags: readonly FlagSpec[];
  /**
   * More rows, made on use: looked up only when no row of `commands` names the words, so a command of
   * `commands` starts without them (docex: the `<resource> <action>` rows made from the operation
   * table, which needs zod).
   */
  moreCommands?(): Promise<ReadonlyArray<CommandRow<I>>>;
  /** Says a failed command's error on stderr and gives its exit code. */
  fail(error: unknown, where: string, options: Options | undefined, io: I): Promise<number>;
}

export const write = (io: Io, text: string) => void io.stdout.write(text.endsWith('\n') ? text : `${text}\n`);

export function commandHelp(command: Command<never>, globalFlags: readonly FlagSpec[]): string {
  if (command.help) return command.help();
  const own = command.flags.filter((f) => !globalFlags.some((g) => g.name === f.name));
  return `Usage: ${command.usage}\n\n${command.description}\n\nFlags:\n${columns(flagRows([...own, ...globalFlags]))}`;
}

/** The row named by the first words (the longest name wins: "templates export" before "templates"). */
export function findRow<I extends Io>(rows: ReadonlyArray<CommandRow<I>>, words: readonly string[]) {
  const matches = rows.filter((row) => {
    const names = row.name.split(' ');
    return names.every((n, i) => words[i] === n);
  });
  return matches.sort((a, b) => b.name.length - a.name.length)[0];
}

/** A command's flags parsed, its help, its run; a failure said once, with its exit code. */
export async function runCommand<I extends Io>(
  program: Program<I>,
  command: Command<I>,
  words: readonly string[],
  io: I,
): Promise<number> {
  const where = `${program.name} ${command.name}`;
  let options: Options | undefined;
  try {
    options = parseFlags(words, [...command.flags, ...program.globalFlags], where, command.maxArgs ?? 0);
    if (options.values.help === true) {
      write(io, commandHelp(command, program.globalFlags));
      return EXIT.ok;
    }
    return await command.run(options, io);
  } catch (error) {
    return program.fail(error, where, options, io);
  }
}

export async function runProgram<I extends Io>(program: Program<I>, argv: string[], io: I): Promise<number> {
  const [first] = argv;
  if (first !== undefined && VERSION_WORDS.includes(first)) {
    write(io, `${program.name} ${program.version}`);
    return EXIT.ok;
  }
  if (first === undefined || HELP_WORDS.includes(first)) {
    write(io, await program.mainHelp());
    return first === undefined ? EXIT.usage : EXIT.ok;
  }
  let rows = program.commands;
  let row = findRow(rows, argv);
  if (!row && program.moreCommands) {
    // The first rows win over the added ones of the same name (docex's own `templates list`).
    rows = [...rows, ...(await program.moreCommands())];
    row = findRow(rows, argv);
  }
  if (row) return runCommand(program, await row.load(), argv.slice(row.name.split(' ').length), io);
  const known = [...new Set(rows.map((r) => r.name.split(' ')[0]!)), '--version', '--help'];
  return program.fail(
    new UsageError(
      `unknown command "${first}"${didYouMean(first, known)}; run "${program.name} --help" for the commands`,
    ),
    program.name,
    undefined,
    io,
  );
}

/** The table's rows as the main help's "Commands:" section. */
export const commandList = (rows: ReadonlyArray<CommandRow<never>>) =>
  columns(rows.map((r) => [r.name, r.summary] as const));
