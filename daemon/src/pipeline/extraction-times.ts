/**
 * What the polls have learnt of how long a template's extractions take (per watch, and per route
 * of a routed watch), and which polls are out: poll.ts teaches it, upload.ts reads it to set an
 * answered upload's first poll. The decisions are domain/poll-timing.ts.
 */
import type { FileRow } from '../domain/lifecycle.ts';
import { firstPollDelayMs, NO_ESTIMATE, type ExtractionEstimate } from '../domain/poll-timing.ts';
import type { StepHost } from './step-host.ts';

/** Extraction times are learnt per template: per watch, and per route of a routed watch. */
export const extractionKey = (row: FileRow) => `${row.watch}\0${row.route ?? ''}`;

export class ExtractionTimes {
  private readonly config: Pick<StepHost['config'], 'poll'>;
  /** How long its extractions take, learnt from its polls (domain/poll-timing.ts). */
  readonly extraction = new Map<string, ExtractionEstimate>();
  /** The polls not answered yet, row id -> when each went out (see firstPollDueMs). */
  readonly pollsOut = new Map<string, Map<number, number>>();
  /**
   * Rows whose upload this process sent and saw answered, until their task is seen final: only
   * their polls teach the poll timing. A task uploaded before a restart waited through the
   * downtime too, which is no extraction time (domain/poll-timing.ts, `seenWhole`).
   */
  readonly uploadsSeen = new Set<number>();

  constructor(config: Pick<StepHost['config'], 'poll'>) {
    this.config = config;
  }

  estimateOf(row: FileRow): ExtractionEstimate {
    return this.extraction.get(extractionKey(row)) ?? NO_ESTIMATE;
  }

  /** This process saw the row's upload answered: when its first poll is due. */
  uploadAnswered(row: FileRow): number {
    this.uploadsSeen.add(row.id);
    return firstPollDelayMs(this.estimateOf(row), this.config.poll);
  }
}
