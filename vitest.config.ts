import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { removeStaleScratch } from './test/support/stale-scratch.ts';

// The run's timings file: fixtures append what they measured (test/support/timing.ts), the timing
// reporter prints it at the end. Workers inherit the variable.
if (!process.env.DOCEX_TIMINGS_FILE) {
  const timings = join(tmpdir(), `docex-timings-${process.pid}.jsonl`);
  process.env.DOCEX_TIMINGS_FILE = timings;
  rmSync(timings, { force: true });
  process.on('exit', () => rmSync(timings, { force: true }));
  // What killed runs left in the temp folder (a packed clone is 1 GB): removed as a run starts.
  removeStaleScratch();
}

/** Every project's set-up file that records each test file's CPU for the timing report. */
const FILE_CPU = ['test/support/file-cpu.ts'];

/**
 * How many test files run at once, in every project. The end-to-end files wait more than they
 * compute (n8n polling on its minute schedule, servers starting), so on two cores four files at a
 * time fill the waits, now that the files cost less CPU (docs/performance.md, "The whole suite").
 * DOCEX_TEST_WORKERS overrides it (1: one file after another, as a bisection aid).
 */
const workers = Number(process.env.DOCEX_TEST_WORKERS ?? 4);

/**
 * The `system` project: files that start real servers or programs as child processes, so that the
 * `unit` project (`npm run test:quick`) holds only files whose tests run in the test's own process
 * (the emulator, the daemon and both CLIs' main() in-process; a `git init` or `mkfifo` at most).
 * `npm test` runs both, side by side in one pool as before. A new file that spawns goes here, in
 * its group (test/lint/test-projects.test.ts refuses a unit file that starts a server or a process).
 */
const SYSTEM = {
  /** Real servers from Debian packages (dovecot, tinyproxy), a private CA made by openssl, curl. */
  servers: [
    'test/daemon/mail/after.test.ts',
    'test/daemon/mail/crash.test.ts',
    'test/daemon/mail/dovecot.test.ts',
    'test/daemon/mail/intake.test.ts',
    'test/daemon/mail/oauth2.test.ts',
    'test/daemon/mail/retry.test.ts',
    'test/daemon/mail/server-kinds.test.ts',
    'test/daemon/commands/proxy-tls.test.ts',
    'test/shared/proxy-tls.test.ts',
    'test/docex-cli/network.test.ts',
    'test/emulator/curl-session.test.ts',
  ],
  /** docex-sync as an operator runs it: a process of its own (runCli), its exit codes, signals, restarts. */
  daemonProcesses: [
    'test/daemon/commands/cli.test.ts',
    'test/daemon/commands/daemon-heap.test.ts',
    'test/daemon/commands/from-checkout.test.ts',
    'test/daemon/commands/process.test.ts',
    'test/daemon/commands/run-start.test.ts',
    'test/daemon/pipeline/disk-full.test.ts',
    'test/daemon/pipeline/pause.test.ts',
    'test/daemon/pipeline/wakeup.test.ts',
    'test/daemon/require-node.test.ts',
    'test/daemon/status/approve.test.ts',
    'test/daemon/status/healthz-hostile.test.ts',
    'test/daemon/status/review-counts.test.ts',
    'test/daemon/status/review-list.test.ts',
    'test/daemon/status/review-station.test.ts',
    'test/daemon/store/upgrade.test.ts',
    'test/daemon/outputs/review-random.test.ts',
    'test/daemon/pipeline/batch-upload.test.ts',
  ],
  /** docex (the CLI) started as a process: its start-up, its package, commands a user types. */
  cliProcesses: [
    'test/docex-cli/commands.test.ts',
    'test/docex-cli/package.test.ts',
    'test/docex-cli/startup.test.ts',
    'test/docex-cli/templates.test.ts',
  ],
  /** Other programs in processes of their own: the emulator's CLI, a server whose memory must not
   * count in the test's (streaming), n8n's own `n8n-node lint`. */
  otherProcesses: [
    'test/emulator/sandbox.test.ts',
    'test/shared/streaming.test.ts',
    'test/lint/n8n-node-lint.test.ts',
    // A mover killed with SIGKILL between its two steps.
    'test/daemon/common/move.test.ts',
    // The guides' shell blocks, typed as a user would: the CLIs as processes.
    'test/docs/runnable.test.ts',
    // mount and umount of a /proc in a stale Debian root, as the sweep of killed runs' scratch meets it.
    'test/support/stale-scratch.test.ts',
  ],
};
export const SYSTEM_FILES = Object.values(SYSTEM).flat();

/**
 * End-to-end files that must run alone (the project e2e-alone says why): the editor test. The UI
 * install test also drives n8n in Chromium but runs in the pool: its n8n, registry, proxy and
 * browser are its own, and its browser steps' limits scale with its n8n's start-up time, measured
 * under the same load; alone, it kept one core idle for over two minutes at the end of each run.
 */
const E2E_ALONE = ['test/e2e/editor.test.ts'];

/**
 * The end-to-end files first (the longest, and mostly waiting), then the system files, then the
 * unit files (the contract suite runs alone, last).
 */
const PROJECT_ORDER = ['e2e', 'system', 'unit', 'unit-isolated', 'contract'];

/** The files in an order decided by the seed alone (not by the order the glob found them in). */
function shuffled(files: TestSpecification[], seed: number): TestSpecification[] {
  const key = (spec: TestSpecification) => `${spec.project.name}\0${spec.moduleId}`;
  const order = [...files].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
  // mulberry32: a small seeded generator, enough to pick an order.
  let state = seed >>> 0;
  const random = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  for (let i = order.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  return order;
}

class EndToEndFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    // vitest's order within a project: the slowest of the last run first (the size of the file on
    // a fresh clone); a stable sort keeps it. DOCEX_SHUFFLE_FILES=<seed>: the files in a random
    // order by the seed instead (each file's tests keep theirs: some build on the one before), to
    // catch a file that leaks into the next ones of its process (the unit project shares them).
    const seed = process.env.DOCEX_SHUFFLE_FILES;
    const sorted = seed ? shuffled(files, Number(seed)) : await super.sort(files);
    const rank = (spec: TestSpecification) => {
      const index = PROJECT_ORDER.indexOf(spec.project.name);
      return index === -1 ? PROJECT_ORDER.length : index;
    };
    return sorted.sort((a, b) => rank(a) - rank(b));
  }
}

/**
 * The `unit-isolated` project: in-process files that patch what every later file of their process
 * would see, so each runs in a fresh process (vitest's isolation). The rest of `unit` shares its
 * processes between files (`isolate: false`), which imports our sources and n8n-workflow once per
 * process instead of once per file. Found by grep and by running `unit` in random orders: these
 * made later files fail. A new file that patches goes here, in its group
 * (test/lint/test-projects.test.ts refuses one in `unit`).
 */
const ISOLATED = {
  /** nock: loading it patches Node's http for the whole process (real uploads through its interceptor:
   * upload-wire.test.ts's bodies), and disableNetConnect outlives the file (later emulator files
   * failed with "Nock: Disallowed net connect"). */
  nock: [
    'test/daemon/common/exit.test.ts',
    'test/shared/batch.test.ts',
    'test/shared/errors.test.ts',
    'test/shared/logging.test.ts',
    'test/shared/operations.test.ts',
    'test/shared/poll.test.ts',
    'test/shared/retry.test.ts',
    'test/shared/shapes.test.ts',
  ],
  /** vi.mock of node:fs: hoisted to the file's first import, so it must meet a daemon not yet
   * loaded with the real fs, and must not reach the next file's. */
  mockedModules: ['test/daemon/intake/blind-watcher.test.ts', 'test/daemon/intake/rescan-cost.test.ts'],
};
export const ISOLATED_FILES = Object.values(ISOLATED).flat();

export default defineConfig({
  test: {
    reporters: ['default', './test/support/timing-reporter.ts'],
    // The projects share one pool (same maxWorkers, same sequence.groupOrder), so unit files
    // run while end-to-end files wait; a project of its own with other limits would run after it.
    maxWorkers: workers,
    sequence: { sequencer: EndToEndFirst },
    projects: [
      {
        // In-process files (the quick loop, `npm run test:quick`, with `unit-isolated` and the
        // contract suite). Processes (forks), not worker threads: threads share one libuv thread
        // pool between the files of a run (fs, zlib, crypto: test/shared/large-answers.test.ts
        // keeps pbkdf2 busy on purpose), a coupling between files that processes do not have.
        // Not isolated: a process runs file after file and imports our sources once, not once per
        // file (imports were most of the project's CPU); the files that patch process-wide state
        // are `unit-isolated` (ISOLATED above). docs/performance.md, "The quick loop".
        test: {
          name: 'unit',
          include: ['test/**/*.test.ts'],
          exclude: [
            'test/contract/**',
            'test/e2e/**',
            ...SYSTEM_FILES,
            ...ISOLATED_FILES,
            '**/node_modules/**',
          ],
          setupFiles: FILE_CPU,
          testTimeout: 20_000,
          hookTimeout: 30_000,
          maxWorkers: workers,
          isolate: false,
        },
      },
      {
        // In-process files that patch process-wide state (ISOLATED above says which and why): a
        // fresh process per file, vitest's defaults.
        test: {
          name: 'unit-isolated',
          include: ISOLATED_FILES,
          setupFiles: FILE_CPU,
          testTimeout: 20_000,
          hookTimeout: 30_000,
          maxWorkers: workers,
        },
      },
      {
        // Files that start real servers or processes (SYSTEM above says which and why); the global
        // set-up installs the Debian packages the servers come from.
        test: {
          name: 'system',
          include: SYSTEM_FILES,
          globalSetup: ['test/support/debian-packages.ts'],
          setupFiles: FILE_CPU,
          // Node's compile cache for every process these files start, for docex-sync and docex run
          // from the sources above all: a start costs about 0.3-0.5 s of CPU less with it (type
          // stripping and compiling done once, not per process). It is keyed by each
          // file's content, never stale, and safe to share (entries are written whole, then renamed).
          // The tests about the cache itself set their own (test/docex-cli/startup.test.ts).
          env: { NODE_COMPILE_CACHE: join(import.meta.dirname, 'node_modules/.cache/docex-compile') },
          testTimeout: 20_000,
          hookTimeout: 30_000,
          maxWorkers: workers,
        },
      },
      {
        // Runs against DOCEX_BASE_URL / DOCEX_API_KEY when set, else against the emulator it starts.
        // Alone, after the other files (a few seconds): two files against one live account would
        // see each other's folders and documents.
        test: {
          name: 'contract',
          include: ['test/contract/**/*.test.ts'],
          globalSetup: ['test/contract/global-setup.ts'],
          setupFiles: FILE_CPU,
          testTimeout: 60_000,
          hookTimeout: 60_000,
          fileParallelism: false,
        },
      },
      {
        // A real n8n (N8N_VERSION of test/e2e/n8n-instance.ts, installed into the user cache on
        // first run by the global set-up) against the emulator. The files run side by side: none
        // shares a port or a folder with another (free ports, folders of their own, the shared
        // n8n's rules in test/e2e/shared.ts).
        test: {
          name: 'e2e',
          include: ['test/e2e/**/*.test.ts'],
          exclude: [...E2E_ALONE, '**/node_modules/**'],
          globalSetup: ['test/e2e/global-setup.ts'],
          setupFiles: FILE_CPU,
          testTimeout: 900_000,
          hookTimeout: 900_000,
          maxWorkers: workers,
        },
      },
      {
        // Alone, after every other file: a real n8n editor in Chromium is CPU-bound, and the
        // editor test's step limits (a multiple of its n8n's start-up time, docs/n8n.md) were
        // missed in full runs with other files beside it. Its n8n starts with the run (the global
        // set-up is the e2e project's, shared), so it is ready when the file's turn comes.
        test: {
          name: 'e2e-alone',
          include: E2E_ALONE,
          globalSetup: ['test/e2e/global-setup.ts'],
          setupFiles: FILE_CPU,
          testTimeout: 900_000,
          hookTimeout: 900_000,
          fileParallelism: false,
        },
      },
    ],
  },
});
