/**
 * The two mistakes a person makes before any work starts, for both binaries. Neither imports
 * anything, so the entries can throw and recognise them with nothing heavy loaded.
 */

/** The command line is wrong (an unknown flag, a missing value, a bad date): exit 2 (EXIT.usage). */
export class UsageError extends Error {}

/** A config mistake: the message names the file; `problems` holds one line per problem, each naming its key. */
export class ConfigError extends Error {
  readonly problems: string[];
  constructor(message: string, problems: string[] = [message]) {
    super(message);
    this.problems = problems;
  }
}
