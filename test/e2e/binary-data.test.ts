/**
 * Extract reads its input files through n8n's binary helpers, whatever n8n's binary data mode:
 * here `filesystem` (N8N_DEFAULT_BINARY_DATA_MODE, regular mode's default, set explicitly), in an n8n
 * of this file's own so that its memory is this file's alone; `database`, queue mode's, is
 * test/e2e/queue.test.ts (a worker extracts the files main stored in PostgreSQL).
 *
 * A 200 MB file goes through Read File → Extract, and the n8n process's peak resident memory
 * (VmHWM) is printed before and after. The file stays on disk between the nodes (filesystem mode);
 * Extract holds it once, whole, while it uploads: n8n's node API gives community nodes no way to
 * stream a file into a request (getBinaryStream needs Node streams, which n8n's rules for
 * community nodes forbid: docs/n8n.md, "Binary data").
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { open, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createInvoiceTemplate } from './invoices.ts';
import type { N8nRest } from './n8n-rest.ts';
import { prepareN8n, type RealN8n } from './real-n8n.ts';
import { n8nReady, startN8n, type Service } from './services.ts';
import { SHARED_N8N_WAIT_MS } from './shared.ts';
import { outputOf, readAndExtract, templateFromList } from './workflows.ts';

const MB = 1024 * 1024;
const BIG_FILE_BYTES = 200 * MB;

let n8n: RealN8n;
let server: (Service & { url: string; startedAt: number }) | undefined;
let rest: N8nRest;
let templateId = 0;

const sha256Of = async (file: string) => {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest('hex');
};

/** The n8n process's peak and current resident memory, from /proc (kB → MB). */
async function memoryOf(pid: number): Promise<{ peakMb: number; rssMb: number }> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kb = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
  return { peakMb: Math.round(kb('VmHWM') / 1024), rssMb: Math.round(kb('VmRSS') / 1024) };
}

beforeAll(async () => {
  n8n = await prepareN8n({ taskDelayMs: 20 }, { env: { N8N_DEFAULT_BINARY_DATA_MODE: 'filesystem' } });
  server = await startN8n(n8n);
  await n8nReady(server);
  rest = await n8n.signIn(server);
  templateId = await createInvoiceTemplate(n8n.emulator, 'binary data e2e');
}, SHARED_N8N_WAIT_MS);

afterAll(async () => {
  await server?.stop();
  await n8n?.cleanup();
});

describe('binary data in filesystem mode', () => {
  it('Extract reads a file Read File stored on disk (a filesystem binary ID)', async () => {
    const file = join(n8n.home, 'files', 'small.txt');
    await writeFile(file, 'Invoice number: FS-1\nTotal: 3,00\n');
    const runData = await rest.execute(readAndExtract('wfbinaryfs00001', file, templateId));
    const [read] = outputOf(runData, 'Read File');
    expect(read!.binary?.data?.id).toMatch(/^filesystem(-v2)?:/);
    const [extracted] = outputOf(runData, 'Extract');
    expect(extracted!.json).toMatchObject({ document_name: 'small.txt', 'Invoice number': 'FS-1', Total: 3 });
  });

  it('a 200 MB file goes through Read File → Extract; the peak memory of n8n is printed', async () => {
    const file = join(n8n.home, 'files', 'big.txt');
    // The invoice's lines first, then filler up to 200 MB, written in 1 MB steps.
    const handle = await open(file, 'w');
    await handle.write('Invoice number: BIG-200\nTotal: 200,00\n');
    const filler = Buffer.alloc(MB, 'lorem ipsum dolor sit amet\n');
    let written = (await handle.stat()).size;
    while (written < BIG_FILE_BYTES) {
      const chunk = filler.subarray(0, Math.min(MB, BIG_FILE_BYTES - written));
      await handle.write(chunk);
      written += chunk.length;
    }
    await handle.close();

    const pid = server!.process.pid!;
    const before = await memoryOf(pid);
    const started = performance.now();
    const runData = await rest.execute(readAndExtract('wfbinarybig0001', file, templateId, templateFromList));
    const seconds = (performance.now() - started) / 1000;
    const after = await memoryOf(pid);
    process.stderr.write(
      `binary-data e2e: 200 MB file in filesystem mode through Read File -> Extract in ${seconds.toFixed(1)} s; ` +
        `n8n peak RSS ${before.peakMb} MB before, ${after.peakMb} MB after (+${after.peakMb - before.peakMb} MB); ` +
        `RSS now ${after.rssMb} MB\n`,
    );
    const [read] = outputOf(runData, 'Read File');
    expect(read!.binary?.data?.id).toMatch(/^filesystem(-v2)?:/);
    const [extracted] = outputOf(runData, 'Extract');
    expect(extracted!.json).toMatchObject({ document_name: 'big.txt', 'Invoice number': 'BIG-200' });
    // The emulator got the whole file, byte for byte.
    expect(n8n.emulator.stats().uploadsByHash[await sha256Of(file)]).toBe(1);
  });
});
