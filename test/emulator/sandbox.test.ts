/** `npm run sandbox` says where it really listens: the bound address, and for a wildcard the URLs to use. */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import type { NetworkInterfaceInfo } from 'node:os';
import { describe, expect, it } from 'vitest';
import { listeningLine } from '../../emulator/addresses.ts';

const root = join(import.meta.dirname, '../..');
const lo: NetworkInterfaceInfo = {
  address: '127.0.0.1',
  netmask: '255.0.0.0',
  family: 'IPv4',
  mac: '',
  internal: true,
  cidr: null,
};
const eth4: NetworkInterfaceInfo = { ...lo, address: '192.0.2.7', internal: false };
const eth6: NetworkInterfaceInfo = { ...lo, address: 'fd00::7', family: 'IPv6', internal: false, scopeid: 0 };
const link6: NetworkInterfaceInfo = { ...eth6, address: 'fe80::1' };
const interfaces = { lo: [lo], eth0: [eth4, eth6, link6] };

describe('the listening line', () => {
  it('a named address: its URL', () => {
    expect(listeningLine({ address: '127.0.0.1', family: 'IPv4', port: 8080 }, interfaces)).toBe(
      'listening on http://127.0.0.1:8080',
    );
    expect(listeningLine({ address: '::1', family: 'IPv6', port: 8080 }, interfaces)).toBe(
      'listening on http://[::1]:8080',
    );
  });

  it('0.0.0.0: the wildcard as bound, the URL for this machine, the IPv4 URLs for others', () => {
    expect(listeningLine({ address: '0.0.0.0', family: 'IPv4', port: 9000 }, interfaces)).toBe(
      'listening on 0.0.0.0:9000 (every IPv4 address of this machine): http://127.0.0.1:9000 here; from other machines: http://192.0.2.7:9000',
    );
  });

  it(':: also lists IPv6 addresses (not link-local ones, which need a zone)', () => {
    expect(listeningLine({ address: '::', family: 'IPv6', port: 9000 }, interfaces)).toBe(
      'listening on :::9000 (every address of this machine): http://127.0.0.1:9000 here; from other machines: http://192.0.2.7:9000, http://[fd00::7]:9000',
    );
  });

  it('a machine with loopback only says so', () => {
    expect(listeningLine({ address: '0.0.0.0', family: 'IPv4', port: 1 }, { lo: [lo] })).toMatch(
      /here; this machine has no other network address$/,
    );
  });
});

/** Starts the sandbox with `args`, returns its first line and a stop function. */
async function sandbox(args: string[]) {
  const child = spawn(process.execPath, [join(root, 'emulator/cli.ts'), ...args], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const line = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (chunk) => {
      out += chunk;
      if (out.includes('\n')) resolve(out.split('\n')[0]!);
    });
    child.once('exit', (code) => reject(new Error(`sandbox exited with ${code}: ${out}`)));
  });
  const stop = async () => {
    if (child.exitCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await exited;
  };
  return { line, stop };
}

const checkKey = (url: string) =>
  fetch(`${url}/v1/check_api_key/`, {
    method: 'POST',
    headers: { authorization: 'Bearer demo-key-acme' },
  }).then((r) => r.status);

describe('npm run sandbox', { timeout: 60_000 }, () => {
  it('--host 0.0.0.0 prints 0.0.0.0 and the port it was given by the system, and answers on 127.0.0.1', async () => {
    const { line, stop } = await sandbox(['--host', '0.0.0.0', '--port', '0']);
    try {
      const match =
        /^Document Extraction Service emulator listening on 0\.0\.0\.0:(\d+) \(every IPv4 address of this machine\): (http:\/\/127\.0\.0\.1:(\d+)) here; /.exec(
          line,
        );
      expect(match, line).not.toBeNull();
      expect(match![3]).toBe(match![1]);
      expect(Number(match![1])).toBeGreaterThan(0);
      expect(await checkKey(match![2]!)).toBe(200);
    } finally {
      await stop();
    }
  });

  it('by default prints the loopback URL with the real port', async () => {
    const { line, stop } = await sandbox(['--port', '0']);
    try {
      const url = /^Document Extraction Service emulator listening on (http:\/\/127\.0\.0\.1:[1-9]\d*)$/.exec(
        line,
      )?.[1];
      expect(url, line).toBeDefined();
      expect(await checkKey(url!)).toBe(200);
    } finally {
      await stop();
    }
  });
});
