/**
 * What docex's commands share once they run: the account's client (from the profile, made on first
 * use) and where output goes. Heavy (the client), so each command imports it when it runs.
 */
import type { DocexClient } from '@docex/shared';
import { isOn, text, type Options } from '@docex/cli-kit/args';
import type { Io } from '@docex/cli-kit/command';
import { clientFrom, settingsFor } from './profile.ts';

export interface Context {
  io: Io;
  /** JSON output: --json, or stdout is not a terminal. */
  json: boolean;
  client: () => DocexClient;
  out: (text: string) => void;
}

export function contextFor(io: Io, options: Options): Context {
  let client: DocexClient | undefined;
  return {
    io,
    json: isOn(options, 'json') || !io.stdout.isTTY,
    out: (line) => void io.stdout.write(line.endsWith('\n') ? line : `${line}\n`),
    client: () =>
      (client ??= clientFrom(
        settingsFor({ profile: text(options, 'profile'), config: text(options, 'config') }, io.env),
        io.env,
        (line) => void io.stderr.write(`${line}\n`),
        isOn(options, 'debug'),
      )),
  };
}
