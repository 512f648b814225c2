/** `docex-sync run`: watchers, pipeline, pulls, scheduled reruns and the HTTP listener, stopped cleanly. */
import { mkdir } from 'node:fs/promises';
import type { Server } from 'node:http';
import cron, { type ScheduledTask } from 'node-cron';
import type { Logger } from 'pino';
import type { DocexClient } from '@docex/shared';
import type { Config, ConfigSlice } from '../config/config.ts';
import { removeStaleTemps } from '../common/files.ts';
import { startHttp } from '../status/http.ts';
import { createMetrics } from '../status/metrics.ts';
import { createNotifier, type Notifier } from '../outputs/notify.ts';
import { Pipeline } from '../pipeline/pipeline.ts';
import { startSummaries } from '../jobs/progress.ts';
import { progressBar } from '../common/progressbar.ts';
import { pullOnce } from '../jobs/pull.ts';
import { runRerun } from '../jobs/reruns.ts';
import { ResultWriter } from '../outputs/results.ts';
import { StateDb } from '../store/state.ts';
import { wakeOnOtherWriters } from '../pipeline/wakeup.ts';
import { auditAnnouncer } from './audit-log.ts';
import type { KeyCheck } from './preflight.ts';
import { pruneOnSchedule } from '../jobs/retention.ts';
import { EXIT, KeyRefusedError } from '@docex/cli-kit/exit';
import { FolderWatcher } from '../intake/watcher.ts';
import { steadyClock } from '../common/clock.ts';
import type { MailIntake, MailboxRetry } from '../mail/intake.ts';

export interface RunningDaemon {
  db: StateDb;
  pipeline: Pipeline;
  http: Server | undefined;
  mailboxes: MailIntake[];
  /** Settles with the error when the run cannot go on (the API key was refused); never resolves otherwise. */
  failure: Promise<unknown>;
  stop(): Promise<void>;
}

export interface StartOptions {
  /** The wall clock the scheduling clock starts from (tests step it); see common/clock.ts. */
  wallClock?: () => number;
  /** The monotonic clock it advances with (tests drive it). */
  monotonic?: () => number;
  /**
   * The start's key check could not reach the service (why): the run starts, says the service is
   * unreachable, and checks the key again with backoff until the service answers; a refusal then
   * stops the run (exit 3) as at start.
   */
  keyUnchecked?: { reason: string; check: () => Promise<KeyCheck> };
  /** The start's key check passed: a refusal an earlier run recorded is cleared. */
  keyAccepted?: boolean;
  /** How soon mailboxes log in again (tests lengthen the backoff to show a changed token file cuts it short). */
  mailboxRetry?: Partial<MailboxRetry>;
}

/**
 * How long the daemon's state changes gather before they commit (group commit, StateDb): the
 * changes of the files in flight share a commit instead of paying one each per event-loop turn.
 * Effects that must follow a durable state wait for it (`durable()`), so this only bounds what a
 * crash makes the daemon redo.
 */
const COMMIT_WINDOW_MS = 5;

export async function startDaemon(
  config: Config,
  client: DocexClient,
  log: Logger,
  options: StartOptions = {},
): Promise<RunningDaemon> {
  const now = steadyClock(options.wallClock, options.monotonic);
  const db = new StateDb(config.state_db, undefined, { commitWindowMs: COMMIT_WINDOW_MS });
  try {
    db.lockExclusive(Date.now());
  } catch (error) {
    db.close();
    throw error;
  }
  db.reruns.abandonRunningReruns(Date.now());
  if (options.keyAccepted) db.flags.clearKeyRefusal();
  const metrics = createMetrics(db, { processMetrics: config.http !== undefined });
  const results = new ResultWriter(client, { log });
  const notify = createNotifier(config, log);
  const stopping = new AbortController();
  const pipeline = new Pipeline({ db, client, config, log, metrics, results, now });
  if (notify)
    notifyFrom(
      pipeline,
      notify,
      config.notify?.webhooks.some((w) => w.events.includes('result_written')),
    );
  const failure = new Promise<unknown>((resolve) => pipeline.once('run-refused', resolve));
  // Recorded at once, so status, the page and /healthz say it while the run stops, and after.
  pipeline.once('run-refused', (error) => db.flags.markKeyRefused(Date.now(), (error as Error).message));
  pipeline.recover();
  const keyCheck =
    options.keyUnchecked &&
    checkKeyUntilAnswered(pipeline, config, log, options.keyUnchecked, () => db.flags.clearKeyRefusal());
  let temps = 0;
  for (const w of config.watch) {
    // Never the watched folder itself: a missing one is a share not mounted, not something to create.
    for (const dir of [w.output, w.failed_dir, w.processed_dir, w.review_dir])
      if (dir) await mkdir(dir, { recursive: true });
    for (const dir of [w.output, w.failed_dir, w.review_dir]) if (dir) temps += await removeStaleTemps(dir);
  }
  if (config.pull) temps += await removeStaleTemps(config.pull.output);
  if (temps) log.info({ files: temps }, 'removed temp files left by an earlier crash');
  let scanned = 0;
  const scanBar = progressBar(process.stderr, 'start-up scan: files found');
  // A watch now polled (or gone from the config) has no native watcher to be blind.
  for (const watch of Object.keys(db.flags.blindWatchers()))
    if (!config.watch.some((w) => w.path === watch && !w.polling)) db.flags.setBlindWatcher(watch, null);
  const watchers = config.watch.map(
    (w) =>
      new FolderWatcher(
        w,
        pipeline,
        log,
        () => scanBar.update(++scanned),
        (blind) => db.flags.setBlindWatcher(w.path, blind),
      ),
  );
  // Files whose discovery was rolled back while the disk was full are found again at once: their
  // folders did not change, so the rescan reads every folder.
  pipeline.on('disk-resumed', () => {
    for (const w of watchers) void w.scan('full');
  });
  pipeline.start();
  const announce = auditAnnouncer(db, log);
  announce();
  const otherWriters = wakeOnOtherWriters(
    db,
    () => {
      pipeline.wake();
      announce(); // a command's approve, reject or retry: said in this log
    },
    log,
  );
  await Promise.all(watchers.map((w) => w.start())).finally(() => scanBar.finish());
  // imapflow and mailparser are loaded only for a config with mailboxes (seconds of start-up otherwise).
  const mailboxes = config.mailboxes.length
    ? await (
        await import('../mail/intake.ts')
      ).startMailboxes({
        mailboxes: config.mailboxes,
        db,
        log,
        wake: () => pipeline.wake(),
        retry: options.mailboxRetry,
      })
    : [];

  const tasks: ScheduledTask[] = [];
  let pulling = false;
  if (config.pull) {
    await mkdir(config.pull.output, { recursive: true });
    tasks.push(
      cron.schedule(config.pull.schedule, async () => {
        if (pulling) return;
        pulling = true;
        await pullOnce({ db, client, config, log, metrics })
          .catch((error: unknown) =>
            log.error({ err: (error as Error).message }, 'pull failed; the cursor did not move'),
          )
          .finally(() => (pulling = false));
      }),
    );
  }
  for (const job of config.reruns) {
    tasks.push(
      cron.schedule(
        job.schedule,
        () =>
          void runRerun({ db, client, log, config, results, notify, signal: stopping.signal }, job).catch(
            (error: unknown) => log.error({ rerun: job.name, err: (error as Error).message }, 'rerun failed'),
          ),
      ),
    );
  }
  // Retention: each schedule prunes the watches that name it (node-cron keeps one timer to the next run).
  const pruning = new Map<string, Promise<void>>();
  for (const schedule of new Set(config.watch.flatMap((w) => (w.retention ? [w.retention.schedule] : [])))) {
    const watches = config.watch.filter((w) => w.retention?.schedule === schedule);
    tasks.push(
      cron.schedule(schedule, async () => {
        if (pruning.has(schedule) || stopping.signal.aborted) return;
        const run = pruneOnSchedule({ db, config, watches, now }, log)
          .catch((error: unknown) =>
            log.error(
              { err: (error as Error).message },
              'retention: prune failed; tried again on its next schedule',
            ),
          )
          .finally(() => pruning.delete(schedule));
        pruning.set(schedule, run);
        await run;
      }),
    );
  }
  const summaries = startSummaries(pipeline, db, log);
  const http = config.http
    ? await startHttp({
        db,
        config,
        metrics,
        log,
        wake: () => {
          pipeline.wake();
          announce();
        },
        diskPaused: () => pipeline.diskPaused,
      })
    : undefined;
  log.info(
    {
      folders: config.watch.map((w) => w.path),
      mailboxes: config.mailboxes.map((m) => m.name),
      http: config.http ? `${config.http.host}:${config.http.port}` : undefined,
    },
    'docex-sync running',
  );

  return {
    db,
    pipeline,
    http,
    mailboxes,
    failure,
    async stop() {
      log.info('stopping: no new uploads; waiting for work in flight');
      stopping.abort();
      keyCheck?.stop();
      for (const t of tasks) await t.stop();
      await Promise.all(pruning.values());
      for (const w of watchers) await w.stop();
      for (const m of mailboxes) await m.stop();
      await pipeline.stop();
      otherWriters.close();
      summaries.stop();
      if (http) await closeServer(http);
      await notify?.close();
      db.close();
      log.info('stopped');
    },
  };
}

/** Backoff of the key check while the service is away: the upload's, at most a minute apart. */
function checkKeyUntilAnswered(
  pipeline: Pipeline,
  config: ConfigSlice<'upload'>,
  log: Logger,
  unchecked: NonNullable<StartOptions['keyUnchecked']>,
  accepted: () => void,
) {
  pipeline.serviceUnreachable(`the API key could not be checked: ${unchecked.reason}`);
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  let wait = config.upload.retry_base_ms;
  const again = () => {
    timer = setTimeout(() => {
      void unchecked.check().then(
        (key) => {
          if (stopped) return;
          if (key.ok) {
            log.info('the API key is accepted');
            accepted();
            pipeline.reachable();
          } else if (key.exitCode === EXIT.auth) pipeline.refuse(new KeyRefusedError(key.problem));
          else {
            wait = Math.min(wait * 2, Math.min(config.upload.retry_max_ms, 60_000));
            again();
          }
        },
        (error: unknown) => {
          log.error({ err: (error as Error).message }, 'the API key check failed; trying again');
          if (!stopped) again();
        },
      );
    }, wait);
  };
  again();
  return {
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}

/** The pipeline's events as notifications (the notifier queues and returns at once). */
function notifyFrom(pipeline: Pipeline, notify: Notifier, results = false) {
  pipeline.on('file-failed', (row) =>
    notify.fileFailed({
      file: row.path,
      watch: row.watch,
      reason: row.reason,
      attempts: row.attempts,
      task_id: row.task_id,
      document_id: row.document_id,
    }),
  );
  pipeline.on('watch-paused', (watch, reason) => notify.watchPaused({ watch, reason }));
  pipeline.on('file-held-for-review', (row) => notify.needsReview(row));
  if (results)
    pipeline.on('result-written', (row, files) =>
      notify.resultWritten({
        file: row.path,
        watch: row.watch,
        document_id: row.document_id!,
        outcome: row.outcome ?? 'processed',
        results: files,
      }),
    );
}

/** An open status page keeps a keep-alive connection: idle ones go at once, busy ones get a second. */
async function closeServer(server: Server) {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  const timer = setTimeout(() => server.closeAllConnections(), 1000);
  await closed;
  clearTimeout(timer);
}
