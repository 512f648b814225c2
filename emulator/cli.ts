/** `npm run sandbox`: the emulator on the command line. */
import { networkInterfaces } from 'node:os';
import { parseArgs } from 'node:util';
import { listeningLine } from './addresses.ts';
import { startEmulator } from './index.ts';

const usage = `Usage: npm run sandbox -- [--port 8080] [--host 127.0.0.1] [--task-delay-ms 300] [--data-dir DIR] [--controls]

Starts the Document Extraction Service emulator and prints its URL and demo API keys.`;

try {
  const { values } = parseArgs({
    options: {
      port: { type: 'string', default: '8080' },
      host: { type: 'string', default: '127.0.0.1' },
      'task-delay-ms': { type: 'string', default: '300' },
      'data-dir': { type: 'string' },
      controls: { type: 'boolean', default: false },
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
  const emu = await startEmulator({
    port: number('port', values.port),
    host: values.host,
    taskDelayMs: number('task-delay-ms', values['task-delay-ms']),
    dataDir: values['data-dir'],
    controls: values.controls,
  });
  console.log(`Document Extraction Service emulator ${listeningLine(emu.bound, networkInterfaces())}`);
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
