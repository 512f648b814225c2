/**
 * A discovered file waits until it is stable (the same size and mtime over stable_ms), then is
 * hashed; the lifecycle says when (`hash`). Its route is looked up first: a file no route maps is held.
 */
import { lstat } from 'node:fs/promises';
import type { WatchConfig } from '../config/config.ts';
import type { FileRow } from '../domain/lifecycle.ts';
import { routeFor, type Routed } from '../domain/routes.ts';
import { hashFile } from './hash.ts';
import type { StepHost } from './step-host.ts';

/** Which route sends the file; false when it is held (no route maps it). Also checked before upload. */
export function routed(host: StepHost, row: FileRow, watch: WatchConfig): Routed | false {
  const routing = routeFor(watch, row.rel);
  if ('held' in routing) {
    host.apply(row, { kind: 'unrouted', reason: routing.held });
    host.log.warn({ file: row.path, reason: routing.held }, 'held: no route for this file');
    return false;
  }
  host.apply(row, { kind: 'routed', route: routing.route });
  return routing;
}

/** A `discovered` row's job: routed, seen again, hashed once the lifecycle finds it stable. */
export async function stabilize(host: StepHost, row: FileRow) {
  const watch = host.watches.get(row.watch);
  if (watch && !routed(host, row, watch)) return;
  const seen = await lstat(row.path).catch(() => undefined);
  if (!seen) return void host.apply(row, { kind: 'file-vanished' });
  const first = host.apply(row, { kind: 'file-seen', size: seen.size, mtimeMs: Math.floor(seen.mtimeMs) });
  if (first.decision.effect.kind !== 'hash') return;
  const hashed = await hashFile(row.path).catch(() => undefined);
  if (!hashed) return void host.apply(first.row, { kind: 'file-vanished' });
  host.apply(first.row, { kind: 'hashed', ...hashed });
}
