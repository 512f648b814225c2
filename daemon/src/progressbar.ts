/**
 * A one-line progress bar for long commands (a bulk rerun), redrawn in place on a terminal; on
 * anything else (a pipe, a log file, systemd) it draws nothing, and the log lines tell the progress.
 */
export interface ProgressBar {
  update(done: number, total: number): void;
  /** Ends the line so the next output starts on its own. */
  finish(): void;
}

const WIDTH = 24;

/** Pure: the text of the bar. */
export function renderBar(label: string, done: number, total: number, elapsedMs: number): string {
  const share = total > 0 ? Math.min(1, done / total) : 0;
  const filled = Math.round(share * WIDTH);
  const eta =
    done > 0 && done < total ? ` ETA ${Math.ceil(((total - done) * elapsedMs) / done / 1000)}s` : '';
  return `${label} [${'#'.repeat(filled)}${'-'.repeat(WIDTH - filled)}] ${done}/${total} ${Math.round(share * 100)}%${eta}`;
}

export function progressBar(
  stream: NodeJS.WritableStream & { isTTY?: boolean },
  label: string,
  now: () => number = Date.now,
): ProgressBar {
  if (!stream.isTTY) return { update() {}, finish() {} };
  const started = now();
  let drawn = false;
  return {
    update(done, total) {
      stream.write(`\r\x1b[2K${renderBar(label, done, total, now() - started)}`);
      drawn = true;
    },
    finish() {
      if (drawn) stream.write('\n');
      drawn = false;
    },
  };
}
