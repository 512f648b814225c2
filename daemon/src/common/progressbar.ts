/**
 * A one-line progress bar for long commands (a bulk rerun, a pull, the start-up scan), redrawn in
 * place on a terminal; on anything else (a pipe, a log file, systemd) it draws nothing, and the log
 * lines tell the progress. Log lines written through `aboveTheBar` go above the bar, never into it.
 */
import { Writable } from 'node:stream';

export interface ProgressBar {
  /** Without `total` (not known yet, as in a scan) a count is shown instead of a bar. */
  update(done: number, total?: number): void;
  /** Ends the line so the next output starts on its own. */
  finish(): void;
}

const WIDTH = 24;
const CLEAR_LINE = '\r\x1b[2K';

/** The bar on screen now, if any. */
let shown: { stream: NodeJS.WritableStream; text: string } | undefined;

/** A stream for log lines on `stream`: each clears the bar on screen, and the bar is drawn again below it. */
export function aboveTheBar(stream: NodeJS.WritableStream): Writable {
  return new Writable({
    write(chunk: Buffer | string, _encoding, done) {
      const bar = shown?.stream === stream ? shown : undefined;
      stream.write(bar ? `${CLEAR_LINE}${String(chunk)}${bar.text}` : chunk);
      done();
    },
  });
}

/** Redraws at most this often; the last state is always drawn. */
const REDRAW_MS = 50;

/** Pure: the text of the bar. */
export function renderBar(label: string, done: number, total: number | undefined, elapsedMs: number): string {
  if (total === undefined) return `${label} ${done}`;
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
  let drawnAt = -Infinity;
  let pending: (() => void) | undefined;
  const draw = (done: number, total: number | undefined) => {
    const text = renderBar(label, done, total, now() - started);
    stream.write(`${CLEAR_LINE}${text}`);
    shown = { stream, text };
    drawn = true;
    drawnAt = now();
    pending = undefined;
  };
  return {
    update(done, total) {
      if (done === total || now() - drawnAt >= REDRAW_MS) draw(done, total);
      else pending = () => draw(done, total);
    },
    finish() {
      pending?.();
      if (drawn) stream.write('\n');
      if (shown?.stream === stream) shown = undefined;
      drawn = false;
    },
  };
}
