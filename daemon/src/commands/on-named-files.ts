/**
 * What `approve`, `reject` and `retry` share: the files a user names among the rows a decision
 * applies to, the decision, and what the user is told. A name that names no row is said on stderr
 * and makes the exit 2 while the other names are still acted on (a typo is never a silent no-op);
 * each row the decision skipped is said with why; stdout says how many it took. Loaded when one of
 * them runs, never by the command table.
 */
import { existsSync } from 'node:fs';
import { basename } from 'node:path';
import type { Options } from '@docex/cli-kit/args';
import { EXIT } from '@docex/cli-kit/exit-codes';
import type { RetryDeps } from '../actions/retry.ts';
import type { FileRow } from '../domain/lifecycle.ts';
import { StateDb } from '../store/state.ts';
import { cliActor } from './actor.ts';
import { open } from './context.ts';
import type { SyncIo } from './io.ts';
import { namedIds } from './named-files.ts';

export interface NamedFilesDecision {
  /** The command's name, as it starts each line on stderr. */
  command: string;
  /** The rows the names choose among (those waiting for review, the failed ones). */
  candidates(db: StateDb): FileRow[];
  /** Whether a row is also named as it waits in review_dir (besides as it was found). */
  alsoInReview?: boolean;
  /** Whether an id (12 or #12) names a row too. */
  byId?: boolean;
  /** What a name that names no row is told, after "<command>: <name>: ". */
  namesNothing: string;
  /** What stdout says when there is no state DB yet (nothing to act on). */
  noStateDb: string;
  /** The decision on the rows: those it took and those it skipped, with why. */
  decide(deps: RetryDeps, ids: number[] | 'all'): Promise<{ taken: number[]; skipped: SkippedRow[] }>;
  /** How a skipped row's line starts, e.g. "not approved". */
  skippedAs: string;
  /** What stdout says of `taken` rows (`running`: a daemon runs now and carries them out). */
  said(taken: number, running: boolean): string;
}

interface SkippedRow {
  id: number;
  reason: string;
}

/** Runs `decision` on the files `names` (or every candidate, `all`) name; the command's exit code. */
export async function onNamedFiles(
  options: Options,
  io: SyncIo,
  names: string[],
  all: boolean,
  decision: NamedFilesDecision,
): Promise<number> {
  const { config, out } = open(options, io);
  const unknown = (missing: string[]) => {
    for (const name of missing)
      io.stderr.write(`docex-sync ${decision.command}: ${name}: ${decision.namesNothing}\n`);
    return missing.length > 0 ? EXIT.usage : EXIT.ok;
  };
  if (!existsSync(config.state_db)) {
    out(decision.noStateDb);
    return unknown(names);
  }
  const db = new StateDb(config.state_db);
  try {
    let ids: number[] | 'all' = 'all';
    let unmatched: string[] = [];
    if (!all) {
      const rows = decision.candidates(db);
      const idOf = (name: string) => (/^#?\d+$/.test(name) ? Number(name.replace('#', '')) : undefined);
      const isId = (name: string) => decision.byId === true && rows.some((r) => r.id === idOf(name));
      const named = namedIds(
        rows,
        names.filter((n) => !isId(n)),
        decision.alsoInReview
          ? (r) => (r.review_path === null ? [] : [[r.review_path, basename(r.review_path)]])
          : undefined,
      );
      ids = [...new Set([...names.filter(isId).map((n) => idOf(n)!), ...named.ids])];
      unmatched = named.unmatched;
    }
    const { taken, skipped } = await decision.decide({ db, config, now: io.now, actor: cliActor(io) }, ids);
    for (const s of skipped)
      io.stderr.write(
        `docex-sync ${decision.command}: ${decision.skippedAs}: ${db.files.get(s.id)?.path ?? `#${s.id}`}: ${s.reason}\n`,
      );
    out(decision.said(taken.length, taken.length > 0 && db.daemonRunning()));
    return unknown(unmatched);
  } finally {
    db.close();
  }
}
