/**
 * Named moments at which the kill -9 tests crash the daemon (test/daemon/commands/process.test.ts, "group commit: kill -9 at an exact moment"):
 * `DOCEX_SYNC_CRASH_AT=<point>@<n>` kills this process with SIGKILL the n-th time it reaches
 * `<point>` (n defaults to 1). A crash is then at an exact moment of the work (mid-batch, between
 * a move and its commit), not wherever a timer happened to fall, so a test of what a restart
 * recovers cannot pass by luck. Unset, a point costs one comparison.
 */
export type CrashPointName =
  /** A state DB batch of several writes is about to commit (they are lost with the process). */
  | 'state-commit'
  /** An upload's task id is in the open batch, not committed. */
  | 'answer-stored'
  /** A request of several files was answered; none of their task ids is stored yet. */
  | 'batch-answered'
  /** The daily CSV rows of a group are appended and fsynced; their rows' states are not committed. */
  | 'daily-appended'
  /** An original was moved to processed_dir; its `archived` state is not committed. */
  | 'original-moved';

const wanted = parse(process.env.DOCEX_SYNC_CRASH_AT);
let reached = 0;

function parse(spec: string | undefined): { point: string; nth: number } | undefined {
  if (!spec) return undefined;
  const [point, nth] = spec.split('@');
  return { point: point!, nth: nth === undefined ? 1 : Number(nth) };
}

export function crashPoint(point: CrashPointName) {
  if (wanted === undefined || wanted.point !== point || ++reached < wanted.nth) return;
  process.kill(process.pid, 'SIGKILL');
}
