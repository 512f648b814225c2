/** `npm run sandbox`: the emulator on the command line. */
import { readFileSync } from 'node:fs';
import { networkInterfaces } from 'node:os';
import { parseArgs } from 'node:util';
import { listeningLine } from './addresses.ts';
import { startEmulator } from './index.ts';

const usage = `Usage: npm run sandbox -- [--port 8080] [--host 127.0.0.1] [--task-delay-ms 300] [--data-dir DIR] [--controls]
       [--tls-cert FILE --tls-key FILE [--url-host NAME]]

Starts the Document Extraction Service emulator and prints its URL and demo API keys.
With --tls-cert and --tls-key (PEM: the certificate, then any intermediates; its key) it serves HTTPS;
--url-host puts the certificate's host name in the printed URL.`;

try {
  const { values } = parseArgs({
    options: {
      port: { type: 'string', default: '8080' },
      host: { type: 'string', default: '127.0.0.1' },
      'task-delay-ms': { type: 'string', default: '300' },
      'data-dir': { type: 'string' },
      controls: { type: 'boolean', default: false },
      'tls-cert': { type: 'string' },
      'tls-key': { type: 'string' },
      'url-host': { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    console.log(usage);
    process.exit(0);
  }
  const number = (name: string, v: string) => {
    if (!/^\d+$/.test(v)) throw new Error(`--${name} must be a whole number (got "${v}")`);
    return Number(v);
  };
  const certFile = values['tls-cert'];
  const keyFile = values['tls-key'];
  if ((certFile === undefined) !== (keyFile === undefined))
    throw new Error('--tls-cert and --tls-key go together (the certificate and its private key, PEM)');
  const readPem = (flag: string, file: string) => {
    try {
      return readFileSync(file);
    } catch (error) {
      throw new Error(
        `--${flag} ${file}: cannot read (${(error as NodeJS.ErrnoException).code ?? String(error)})`,
      );
    }
  };
  const tls =
    certFile && keyFile
      ? { cert: readPem('tls-cert', certFile), key: readPem('tls-key', keyFile) }
      : undefined;
  const emu = await startEmulator({
    tls,
    urlHost: values['url-host'],
    port: number('port', values.port),
    host: values.host,
    taskDelayMs: number('task-delay-ms', values['task-delay-ms']),
    dataDir: values['data-dir'],
    controls: values.controls,
  });
  console.log(`Document Extraction Service emulator ${listeningLine(emu.bound, networkInterfaces())}`);
  if (tls) console.log(`Serving HTTPS: ${emu.url}`);
  console.log(`API keys: ${emu.keys.join(' (company 1), ')} (company 2)`);
  console.log(`Try: curl -s -X POST -H "Authorization: Bearer ${emu.keys[0]}" ${emu.url}/v1/check_api_key/`);
  const stop = async () => {
    await emu.stop();
    process.exit(0);
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
} catch (error) {
  console.error(`sandbox: ${(error as Error).message}\n\n${usage}`);
  process.exit(2);
}
