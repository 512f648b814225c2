/**
 * What one n8n costs in CPU: to readiness (a boot), and per minute while idle, as the e2e global
 * set-up starts it (test/e2e/global-setup.ts). The CPU is n8n's process tree's (/proc/<pid>/stat).
 *
 *   bash scripts/run.sh node bench/n8n-idle.ts <n8n bin> <n8n-nodes-docex tarball> <idle seconds> [KEY=value ...]
 */
import { readFileSync, readdirSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { migratedSqliteFolder, n8nEnvironment, prepareUserFolder } from '../test/e2e/n8n-instance.ts';
import { n8nReady, setUpOwner, startN8n } from '../test/e2e/services.ts';

const [bin, tarball, idleSeconds = '120', ...settings] = process.argv.slice(2);
if (!bin || !tarball)
  throw new Error('usage: n8n-idle.ts <n8n bin> <tarball> <idle seconds> [KEY=value ...]');
const extra = Object.fromEntries(
  settings.map((s) => [s.slice(0, s.indexOf('=')), s.slice(s.indexOf('=') + 1)]),
);

const TICKS = 100; // USER_HZ on Linux
/** CPU seconds of `pid` and every live descendant (utime+stime, plus what reaped children spent). */
function treeCpu(pid: number): number {
  const stats = readdirSync('/proc')
    .filter((p) => /^\d+$/.test(p))
    .map((p) => {
      try {
        const text = readFileSync(`/proc/${p}/stat`, 'utf8');
        const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
        return {
          pid: Number(p),
          ppid: Number(fields[1]),
          ticks: [11, 12, 13, 14].reduce((s, i) => s + Number(fields[i]), 0),
        };
      } catch {
        return undefined;
      }
    })
    .filter((s) => s !== undefined);
  const inTree = new Set([pid]);
  for (let grew = true; grew;) {
    grew = false;
    for (const s of stats)
      if (!inTree.has(s.pid) && inTree.has(s.ppid)) {
        inTree.add(s.pid);
        grew = true;
      }
  }
  return stats.filter((s) => inTree.has(s.pid)).reduce((sum, s) => sum + s.ticks, 0) / TICKS;
}

const home = await prepareUserFolder(tarball, await migratedSqliteFolder(bin));
const server = await startN8n({ bin, env: await n8nEnvironment(home, extra) });
const pid = server.process.pid!;
const readyMs = await n8nReady(server);
const atReady = treeCpu(pid);
await setUpOwner(server.url);
// The owner set-up's own work settles first.
await new Promise((r) => setTimeout(r, 15_000));
const idleFrom = treeCpu(pid);
await new Promise((r) => setTimeout(r, Number(idleSeconds) * 1000));
const idle = treeCpu(pid) - idleFrom;
console.log(
  JSON.stringify({
    settings: extra,
    readyS: Math.round(readyMs / 100) / 10,
    bootCpuS: atReady,
    idleCpuSPerMin: Math.round((idle / Number(idleSeconds)) * 60 * 100) / 100,
    load: readFileSync('/proc/loadavg', 'utf8').trim(),
  }),
);
await server.stop();
await rm(home, { recursive: true, force: true });
