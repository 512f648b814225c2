/** A file's SHA-256, size and mtime, read through one handle (the pipeline's stabilize step). */
import { createHash } from 'node:crypto';
import { open } from 'node:fs/promises';

/** The pipeline's local jobs at once: at most this many read buffers are kept. */
const KEPT_BUFFERS = 8;
const HASH_CHUNK = 256 * 1024;
/**
 * Read buffers of finished hashes, kept for the next ones: a fresh 256 KB buffer per file is a
 * malloc outside the JS heap per file, freed only when the GC gets to it, which grows RSS by
 * fragmentation in a long run (bench/soak.bench.ts). At most one per concurrent hash is kept.
 */
const spareHashBuffers: Buffer[] = [];

/** The file's SHA-256, and its size and mtime once read (through one handle: no stream, no second stat). */
export async function hashFile(path: string) {
  const buffer = spareHashBuffers.pop() ?? Buffer.allocUnsafeSlow(HASH_CHUNK);
  try {
    return await hashWith(path, buffer);
  } finally {
    if (spareHashBuffers.length < KEPT_BUFFERS) spareHashBuffers.push(buffer);
  }
}

async function hashWith(path: string, buffer: Buffer) {
  const file = await open(path, 'r');
  try {
    const hash = createHash('sha256');
    for (;;) {
      const { bytesRead } = await file.read(buffer, 0, HASH_CHUNK, null);
      if (bytesRead === 0) break;
      hash.update(buffer.subarray(0, bytesRead));
    }
    const after = await file.stat();
    return { sha256: hash.digest('hex'), size: after.size, mtimeMs: Math.floor(after.mtimeMs) };
  } finally {
    await file.close();
  }
}
