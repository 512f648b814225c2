/**
 * Paces garbage collection on long downloads. Node's HTTP layer hands each socket read to the reader
 * as a new buffer (~64 KB) held outside V8's heap; once written to disk it is garbage, but V8 frees
 * such buffers only in a collection, which it starts when they reach ~64 MB (its external-memory
 * step) because the few small objects a chunk allocates never fill the young generation, so a
 * download sat tens of MB above where it started (figures in docs/client.md, "Memory"). A young-
 * generation collection every few MB frees them cheaply.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

type Gc = (options: { type: 'minor' | 'major'; execution?: 'sync' }) => void;

let gc: Gc | null | undefined;

function collector(): Gc | null {
  if (gc !== undefined) return gc;
  try {
    // --expose-gc for contexts made from now on: the function comes from a fresh context; the
    // program's own global object stays as it was.
    setFlagsFromString('--expose-gc');
    gc = (runInNewContext('gc') as Gc | undefined) ?? null;
  } catch {
    gc = null;
  }
  return gc;
}

/** Bytes read between two collections. */
export const COLLECT_EVERY_BYTES = 4 * 1024 * 1024;

/** Counts bytes read; every COLLECT_EVERY_BYTES, a young-generation collection. */
export function collectingPacer(): (bytes: number) => void {
  let since = 0;
  return (bytes) => {
    since += bytes;
    if (since < COLLECT_EVERY_BYTES) return;
    since = 0;
    collector()?.({ type: 'minor' });
  };
}
