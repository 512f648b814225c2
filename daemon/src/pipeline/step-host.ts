/**
 * What every step of the pipeline is given (stabilize.ts, upload.ts, poll.ts, write-results.ts,
 * archive.ts, failure-report.ts): the run's parts and `apply`, the one way a step changes a row
 * (asks the lifecycle, commits the change, reports run-level effects). The dispatcher
 * (pipeline.ts) makes it; a step decides nothing about a file's fate itself (domain/lifecycle.ts does).
 */
import type { EventEmitter } from 'node:events';
import type { Logger } from 'pino';
import type { DocexClient } from '@docex/shared';
import type { ApiSettings, ConfigSlice, WatchConfig } from '../config/config.ts';
import type { Decision, FileRow, Observation } from '../domain/lifecycle.ts';
import type { ResultWriter } from '../outputs/results.ts';
import type { ReviewQueue } from '../outputs/review.ts';
import type { StateDb } from '../store/state.ts';
import type { StateDbRoomConfig } from '../store/room.ts';
import type { RunEvents, RunState } from './run-state.ts';

/** A count that only goes up (a Prometheus counter: status/metrics.ts gives these). */
interface Tally {
  inc(value?: number): void;
}
interface LabelledTally {
  inc(labels: Record<string, string>, value?: number): void;
}
/** What the pipeline counts; the pipeline names the shape, the status layer implements it. */
export interface PipelineMetrics {
  discovered: Tally;
  uploads: Tally;
  failed: Tally;
  processed: LabelledTally;
  apiErrors: LabelledTally;
}

/**
 * What the pipeline reads of the config: the watches and the mailboxes' spool folders it carries
 * files through, how it polls and uploads, and how many uploads at once.
 */
export type PipelineConfig = ConfigSlice<'watch' | 'mailboxes' | 'poll' | 'upload'> &
  StateDbRoomConfig & {
    api: Pick<ApiSettings, 'concurrency' | 'requests_per_second'>;
  };

/** What a notifier, the status page or a test can subscribe to. */
export interface PipelineEvents extends RunEvents {
  'file-failed': [row: FileRow];
  'result-written': [row: FileRow, files: string[]];
  'file-archived': [row: FileRow];
  /** Review rules fired: the original and its results wait in review_dir for a person. */
  'file-held-for-review': [row: FileRow];
}

/** The scheduler's kinds of job, one per step that works on due rows. */
export type JobKind = 'stabilize' | 'upload' | 'poll' | 'archive' | 'report';

/** What `apply` gives back: the lifecycle's decision and the row as it is now. */
export interface Applied {
  decision: Decision;
  row: FileRow;
}

export interface StepHost {
  db: StateDb;
  client: DocexClient;
  config: PipelineConfig;
  log: Logger;
  metrics: PipelineMetrics | undefined;
  now: () => number;
  /** All watches of all intake sources, by path (intake/sources.ts). */
  watches: ReadonlyMap<string, WatchConfig>;
  run: RunState;
  /** Writes results (keeps the template cache and the daily CSVs); one per process. */
  results: ResultWriter;
  reviews: ReviewQueue;
  events: Pick<EventEmitter<PipelineEvents>, 'emit'>;
  /** Asks the lifecycle, commits the changes, reports run-level effects. */
  apply(row: FileRow, observation: Observation): Applied;
  /** Runs the scheduler soon: new work may be due. */
  wake(): void;
}
