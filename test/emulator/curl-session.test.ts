/**
 * The curl session of docs/emulator.md, run as written against `npm run sandbox`'s own entry point,
 * so the documentation cannot drift from the emulator. Only the URL (a free port instead of 8080)
 * and /tmp (a private folder) are substituted.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';

const root = join(import.meta.dirname, '../..');
let sandbox: ChildProcess;
let url: string;
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'docex-curl-'));
  sandbox = spawn(process.execPath, [join(root, 'emulator/cli.ts'), '--port', '0'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  url = await new Promise<string>((resolve, reject) => {
    let out = '';
    sandbox.stdout!.on('data', (chunk) => {
      out += chunk;
      const match = /listening on (http:\/\/\S+)/.exec(out);
      if (match) resolve(match[1]!);
    });
    sandbox.once('exit', (code) => reject(new Error(`sandbox exited with ${code}: ${out}`)));
  });
});

afterAll(async () => {
  if (sandbox.exitCode === null) {
    const exited = new Promise((resolve) => sandbox.once('exit', resolve));
    sandbox.kill('SIGTERM');
    await exited;
  }
  await rm(dir, { recursive: true, force: true });
});

async function documentedSession(): Promise<string[]> {
  const doc = await readFile(join(root, 'docs/emulator.md'), 'utf8');
  // The block may carry its docs-test marker (test/docs/shell-blocks.ts) on the line before the fence.
  const block = /## A session with curl\s+(?:<!--[^\n]*-->\s*)?```sh\n([\s\S]*?)```/.exec(doc)?.[1];
  if (!block) throw new Error('docs/emulator.md has no "A session with curl" block');
  return block
    .trim()
    .split('\n')
    .map((line) => line.replaceAll('/tmp/', `${dir}/`));
}

it('the documented curl session works as written against the sandbox', async () => {
  const [assignments, ...commands] = await documentedSession();
  expect(assignments).toContain('U=http://127.0.0.1:8080');
  const prefix = assignments!.replace('U=http://127.0.0.1:8080', `U=${url}`);
  const run = promisify(execFile);
  const outputs: Record<string, string[]> = {};
  for (const command of commands) {
    const { stdout } = await run('bash', ['-euo', 'pipefail', '-c', `${prefix}\n${command}`]);
    const endpoint = /\/v1\/(\w+)/.exec(command)?.[1] ?? command.split(' ')[0]!;
    (outputs[endpoint] ??= []).push(stdout);
  }
  const json = (endpoint: string, i = 0) => JSON.parse(outputs[endpoint]![i]!);

  expect(json('check_api_key')).toMatchObject({ valid: true });
  expect(json('create_folder')).toMatchObject({ id: 1, name: 'Invoices' });
  const template = json('create_template');
  expect(template).toMatchObject({ id: 1, folder_id: 1, number_locale: 'EU' });
  expect(template.agent_ids).toHaveLength(1);
  expect(json('create_field', 0)).toMatchObject({ name: 'Total', type: 'General fields' });
  expect(json('create_field', 1)).toMatchObject({ name: 'Description', type: 'Line fields', position: 1 });
  expect(json('upload_file').task_id).toEqual(expect.any(String));
  expect(json('fetch_documents')).toEqual([1]);
  const data = json('fetch_document_data');
  expect(data.document_id).toBe(1);
  expect(JSON.stringify(data)).toContain('1234.5');
  expect(outputs.fetch_raw_text![0]).toContain('Total: 1.234,50');
  const zip = await readFile(join(dir, 'files.zip'));
  expect(zip.subarray(0, 2).toString()).toBe('PK');
  expect(json('rerun_documents')).toMatchObject({ rerun: 0, not_rerun: 1 });
  expect(outputs.rerun_documents![0]).toContain('RERUN_NOT_NEEDED');
});
