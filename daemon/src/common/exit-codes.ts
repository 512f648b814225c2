/**
 * The exit codes alone, importing nothing: the commands' entries answer --version, --help and usage
 * mistakes with them before anything heavy is loaded (exit.ts maps errors to them).
 */
export const EXIT = { ok: 0, failure: 1, usage: 2, auth: 3, unreachable: 4, stateDb: 5 } as const;
export type ExitCode = (typeof EXIT)[keyof typeof EXIT];
