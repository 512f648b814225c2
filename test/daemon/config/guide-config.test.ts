/**
 * The smallest config the operator's guide shows ("Configure": one watched folder) is what it says:
 * valid as written, and each of its keys needed (without any one, the config is refused), so "six
 * keys; everything else has a default" stays true.
 */
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { loadConfig } from '../../../daemon/src/config/config.ts';

const guide = readFileSync(resolve(import.meta.dirname, '../../../docs/daemon.md'), 'utf8');
const configure = guide.slice(guide.indexOf('\n## Configure\n'));
const smallest = /```yaml\n([\s\S]*?)```/.exec(configure)![1]!;

let dir = '';
afterEach(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function load(text: string) {
  dir = await mkdtemp(join(tmpdir(), 'docex-guide-config-'));
  const file = join(dir, 'docex-sync.yaml');
  await writeFile(file, text);
  return () => loadConfig(file);
}

it('the guide says six keys, and its config has six', () => {
  expect(configure).toMatch(/^One watched folder needs six keys; everything else has a default:/m);
  expect(smallest.match(/^\s*(?:- )?[a-z_]+:/gm)!.filter((l) => !/watch:/.test(l))).toHaveLength(6);
});

it('is valid as written', async () => {
  const config = (await load(smallest))();
  expect(config.watch).toHaveLength(1);
  expect(config.watch[0]!.template_id).toBe(1);
});

it('needs each of its keys: without any one of them the config is refused, naming it', async () => {
  const lines = smallest.split('\n');
  const keyLines = lines.flatMap((l, i) => (/^(?:state_db|\s+(?:- )?[a-z_]+):/.test(l) ? [i] : []));
  expect(keyLines).toHaveLength(6);
  for (const i of keyLines) {
    const key = /([a-z_]+):/.exec(lines[i]!)![1]!;
    const without = lines.filter((_, j) => j !== i);
    // Without the entry's first key (`- path:`), the list entry starts at the next one.
    if (/^\s+- /.test(lines[i]!)) without[i] = without[i]!.replace(/^ {4}/, '  - ');
    // Named by the message: the key itself, or what the missing one is needed for.
    const named = key === 'template_id' ? /template_id or folder_id/ : new RegExp(key);
    expect(await load(without.join('\n')), key).toThrow(named);
    await rm(dir, { recursive: true, force: true });
  }
});
