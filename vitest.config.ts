import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

// The run's timings file: fixtures append what they measured (test/support/timing.ts), the timing
// reporter prints it at the end. Workers inherit the variable.
if (!process.env.DOCEX_TIMINGS_FILE) {
  process.env.DOCEX_TIMINGS_FILE = join(tmpdir(), `docex-timings-${process.pid}.jsonl`);
  rmSync(process.env.DOCEX_TIMINGS_FILE, { force: true });
}

/**
 * How many test files run at once, in every project. The suite waits far more than it computes
 * (servers starting, n8n polling on its minute schedule, a browser), so on two cores three files
 * at a time fill the waits; more made the CPU-bound files slower than the waits they hid.
 * DOCEX_TEST_WORKERS overrides it (1: one file after another, as a bisection aid).
 */
const workers = Number(process.env.DOCEX_TEST_WORKERS ?? 3);

/** End-to-end files that must run alone (the project e2e-alone says why). */
const E2E_ALONE = ['test/e2e/editor.test.ts'];

/** The end-to-end files first (the longest, and mostly waiting), then the unit files (the contract suite runs alone, last). */
const PROJECT_ORDER = ['e2e', 'unit', 'contract'];

class EndToEndFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    // vitest's order within a project: the slowest of the last run first (the size of the file on
    // a fresh clone); a stable sort keeps it.
    const sorted = await super.sort(files);
    const rank = (spec: TestSpecification) => {
      const index = PROJECT_ORDER.indexOf(spec.project.name);
      return index === -1 ? PROJECT_ORDER.length : index;
    };
    return sorted.sort((a, b) => rank(a) - rank(b));
  }
}

export default defineConfig({
  test: {
    reporters: ['default', './test/support/timing-reporter.ts'],
    // The three projects share one pool (same maxWorkers, same sequence.groupOrder), so unit files
    // run while end-to-end files wait; a project of its own with other limits would run after it.
    maxWorkers: workers,
    sequence: { sequencer: EndToEndFirst },
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/**/*.test.ts'],
          exclude: ['test/contract/**', 'test/e2e/**', '**/node_modules/**'],
          globalSetup: ['test/support/debian-packages.ts'],
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
          testTimeout: 60_000,
          hookTimeout: 60_000,
          fileParallelism: false,
        },
      },
      {
        // A real n8n 2.40.7 (installed into the user cache on first run, by the global set-up)
        // against the emulator. The files run side by side: none shares a port or a folder with
        // another (free ports, folders of their own, the shared n8n's rules in test/e2e/shared.ts).
        test: {
          name: 'e2e',
          include: ['test/e2e/**/*.test.ts'],
          exclude: [...E2E_ALONE, '**/node_modules/**'],
          globalSetup: ['test/e2e/global-setup.ts'],
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
          testTimeout: 900_000,
          hookTimeout: 900_000,
          fileParallelism: false,
        },
      },
    ],
  },
});
