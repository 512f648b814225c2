/**
 * The installed `docex-sync run`'s V8 flags (daemon/bin/daemon-heap.js), typed for the tests and the
 * soak bench: the bin's files are plain JavaScript without types, because they must parse on any
 * Node to print the version check's sentence.
 */
export const heapModuleUrl = new URL('../../daemon/bin/daemon-heap.js', import.meta.url).href;

export const { daemonExecArgs, SEMI_SPACE_FLAG } = (await import(heapModuleUrl)) as {
  /** The arguments to exec for `run` with the flag, or undefined when Node has one or cannot exec. */
  daemonExecArgs(
    execPath: string,
    execArgv: string[],
    scriptAndArgs: string[],
    nodeOptions: string | undefined,
    canExec: boolean,
  ): string[] | undefined;
  SEMI_SPACE_FLAG: string;
};

/** The flags `run` would start Node with, given this NODE_OPTIONS (a fork gets them as execArgv). */
export function daemonNodeFlags(nodeOptions: string | undefined): string[] {
  return daemonExecArgs('node', [], [], nodeOptions, true) ? [SEMI_SPACE_FLAG] : [];
}
