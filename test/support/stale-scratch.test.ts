/**
 * The sweep of killed runs' scratch (test/support/stale-scratch.ts) in a temp folder of its own,
 * with a real /proc mounted in a stale Debian root as the debian-package test mounts one.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { isStaleScratch, removeStaleScratch, STALE_AFTER_MS } from './stale-scratch.ts';

const NOW = Date.now();
const OLD = (NOW - STALE_AFTER_MS - 60_000) / 1000;
const root = mkdtempSync(join(tmpdir(), 'stale-scratch-test-'));
const mounted = () => readFileSync('/proc/mounts', 'utf8').includes(` ${root}/`);

afterAll(() => {
  for (const line of readFileSync('/proc/mounts', 'utf8').split('\n'))
    if (line.split(' ')[1]?.startsWith(`${root}/`)) spawnSync('umount', ['-l', line.split(' ')[1]!]);
  rmSync(root, { recursive: true, force: true });
});

/** A folder (or file) in the test's temp folder, all of it last touched at `seconds`. */
function made(name: string, seconds: number, inside: string[] = ['file']): string {
  const path = join(root, name);
  if (name.endsWith('.jsonl')) writeFileSync(path, '{}\n');
  else {
    mkdirSync(path);
    for (const entry of inside) writeFileSync(join(path, entry), 'x');
    for (const entry of inside) utimesSync(join(path, entry), seconds, seconds);
  }
  utimesSync(path, seconds, seconds);
  return path;
}

describe('the sweep of killed runs scratch', () => {
  it('removes only the tests own scratch untouched for longer than a run, unmounting first', () => {
    made('docex-pack-AbC123', OLD);
    made('docex-timings-4242.jsonl', OLD);
    const root_ = made('docex-debian-root-Qw12Er', OLD);
    mkdirSync(join(root_, 'proc'));
    utimesSync(root_, OLD, OLD);
    expect(spawnSync('mount', ['-t', 'proc', 'proc', join(root_, 'proc')]).status).toBe(0);
    expect(mounted()).toBe(true);

    const live = made('docex-n8n-e2e-XyZ789', OLD, ['config']);
    writeFileSync(join(live, 'database.sqlite'), 'written now'); // a live n8n's folder
    made('docex-pack-New123', NOW / 1000);
    made('docex-release-0123456789abcdef', OLD); // a cached release: its own rule
    made('docex-demo-Ab12Cd', OLD); // the demo's results, for the user
    made('other-Ab12Cd', OLD);

    expect(removeStaleScratch(root, NOW).sort()).toEqual([
      'docex-debian-root-Qw12Er',
      'docex-pack-AbC123',
      'docex-timings-4242.jsonl',
    ]);
    expect(mounted()).toBe(false);
    for (const kept of [
      'docex-n8n-e2e-XyZ789',
      'docex-pack-New123',
      'docex-release-0123456789abcdef',
      'docex-demo-Ab12Cd',
      'other-Ab12Cd',
    ])
      expect(existsSync(join(root, kept)), kept).toBe(true);
    expect(removeStaleScratch(root, NOW)).toEqual([]);
  });

  it('names: mkdtemp folders and timing files of the tests, old enough', () => {
    const old = NOW - STALE_AFTER_MS - 1;
    expect(isStaleScratch('docex-ui-install-YwP0Ek', old, NOW)).toBe(true);
    expect(isStaleScratch('docex-ui-install-YwP0Ek', NOW - STALE_AFTER_MS + 1000, NOW)).toBe(false);
    expect(isStaleScratch('docex-release-8627cc4831af2dfa', old, NOW)).toBe(false);
    expect(isStaleScratch('docex-release-sources.1234', old, NOW)).toBe(false);
    expect(isStaleScratch('docex-demo-Ab12Cd', old, NOW)).toBe(false);
    expect(isStaleScratch('docex-timings-99.jsonl', old, NOW)).toBe(true);
  });
});
