/**
 * How every docex command's failure is said (docex.ts, Program.fail): one line on stderr, the stack
 * too with DOCEX_DEBUG, and the exit code of docs/cli.md.
 */
import { DocexInputError } from '@docex/shared';
import type { Io } from '../common/command.ts';
import { ConfigError, UsageError } from '../common/errors.ts';
import { EXIT, exitCodeFor } from '../common/exit.ts';
import { PlanError } from './setup/plan.ts';

/** A failed docex command: one line on stderr (the stack too with DOCEX_DEBUG), and its exit code. */
export function failure(error: unknown, where: string, io: Io): number {
  const message = error instanceof Error ? error.message : String(error);
  // Usage errors name their command ("docex rerun: ..."); others get the program's name.
  const prefix = error instanceof UsageError ? where : 'docex';
  io.stderr.write(message.startsWith('docex ') ? `${message}\n` : `${prefix}: ${message}\n`);
  if (io.env.DOCEX_DEBUG && error instanceof Error) io.stderr.write(`${error.stack}\n`);
  if (error instanceof UsageError || error instanceof DocexInputError || error instanceof ConfigError)
    return EXIT.usage;
  if (error instanceof PlanError) return EXIT.failure;
  return exitCodeFor(error);
}
