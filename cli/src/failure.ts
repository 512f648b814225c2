/**
 * How every docex command's failure is said (docex.ts, Program.fail): one line on stderr, the stack
 * too with DOCEX_DEBUG, and the exit code of docs/cli.md.
 */
import { DocexInputError } from '@docex/shared';
import { text, type Options } from '@docex/cli-kit/args';
import type { Io } from '@docex/cli-kit/command';
import { ConfigError, UsageError } from '@docex/cli-kit/errors';
import { EXIT, exitCodeFor } from '@docex/cli-kit/exit';
import { withHint } from '@docex/cli-kit/failure-hints';
import { docexTerms, settingsFor } from './profile.ts';
import { PlanError } from './setup/plan.ts';

/** docex's terms for the profile the command used (its own, if the profiles cannot be read now). */
function termsOf(options: Options | undefined, env: NodeJS.ProcessEnv) {
  const selection = options ? { profile: text(options, 'profile'), config: text(options, 'config') } : {};
  try {
    return docexTerms(settingsFor(selection, env), env);
  } catch {
    return docexTerms({ api: {} }, env);
  }
}

/** A failed docex command: one line on stderr (the stack too with DOCEX_DEBUG), and its exit code. */
export function failure(error: unknown, where: string, io: Io, options?: Options): number {
  // A refused key or an address where no service answers: what to do, in docex's terms.
  const message = withHint(error instanceof Error ? error.message : String(error), error, () =>
    termsOf(options, io.env),
  );
  // Usage errors name their command ("docex rerun: ..."); others get the program's name.
  const prefix = error instanceof UsageError ? where : 'docex';
  io.stderr.write(message.startsWith('docex ') ? `${message}\n` : `${prefix}: ${message}\n`);
  if (io.env.DOCEX_DEBUG && error instanceof Error) io.stderr.write(`${error.stack}\n`);
  if (error instanceof UsageError || error instanceof DocexInputError || error instanceof ConfigError)
    return EXIT.usage;
  if (error instanceof PlanError) return EXIT.failure;
  return exitCodeFor(error);
}
