/**
 * What several benches run alike: the bare walk (the least docex-sync's watcher does, their
 * practical limit) and docex-sync's parts made in the bench's own process as `docex-sync run`
 * makes them. Loaded lazily by the bench roles that need them.
 */
import type { FSWatcher } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';

/**
 * A walk of `tree`: readdir, lstat in batches of 64, one fs.watch per folder made before the folder
 * is read, nothing kept per file. Answers the files found and the watchers (the caller closes them).
 */
export async function bareWalk(tree: string): Promise<{ found: number; watchers: FSWatcher[] }> {
  const { watch } = await import('node:fs');
  const { lstat, readdir } = await import('node:fs/promises');
  const watchers: FSWatcher[] = [];
  let found = 0;
  const walk = async (dir: string): Promise<void> => {
    watchers.push(watch(dir, { encoding: 'buffer' }, () => undefined));
    const files: string[] = [];
    for (const entry of await readdir(dir, { withFileTypes: true }))
      if (entry.isDirectory()) await walk(join(dir, entry.name));
      else files.push(join(dir, entry.name));
    for (let i = 0; i < files.length; i += 64)
      for (const s of await Promise.all(files.slice(i, i + 64).map((f) => lstat(f)))) found += +s.isFile();
  };
  await walk(tree);
  return { found, watchers };
}

/** docex-sync's config from `configFile`, a logger that writes nowhere, and a client to `baseUrl` with the config's pacing. */
export async function daemonParts(configFile: string, baseUrl: string, apiKey: string) {
  const { loadConfig } = await import('../daemon/src/config/config.ts');
  const { createLogger } = await import('../daemon/src/common/logging.ts');
  const { createNodeClient } = await import('@docex/shared/node');
  const config = loadConfig(configFile);
  const log = createLogger('warn', {
    pretty: false,
    destination: new Writable({ write: (_c, _e, cb) => cb() }),
  });
  const client = createNodeClient({
    baseUrl,
    apiKey,
    concurrency: config.api.concurrency,
    intervalCap: config.api.requests_per_second,
    intervalMs: 1000,
    timeoutMs: config.api.timeout_ms,
  });
  return { config, log, client };
}
