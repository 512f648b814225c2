/** Who a command's decision is recorded as in the audit trail: the OS user running it. */
import { userInfo } from 'node:os';
import type { Io } from '@docex/cli-kit/command';
import type { Actor } from '../store/audit.ts';

export function cliActor(io: Io): Actor {
  let who: string | undefined;
  try {
    who = userInfo().username;
  } catch {
    // No passwd entry for the uid (a container): the environment's name, if any.
  }
  return { who: who || io.env.USER || io.env.LOGNAME || `uid ${process.getuid?.() ?? '?'}`, via: 'cli' };
}
