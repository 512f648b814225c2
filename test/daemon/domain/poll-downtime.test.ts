/**
 * The poll timing (daemon/src/domain/poll-timing.ts) learns nothing from time docex-sync was not
 * running: the daemon runs in this process against the emulator with 0.1-s extractions and
 * `poll: { interval_ms: 500 }`, and the test steers its clock instead of waiting the downtime out.
 *
 * - A restart an hour after a file's upload (the second run's wall clock starts an hour later):
 *   the task uploaded by the first run is polled and archived, and teaches nothing; the files
 *   dropped after it are each polled once, within the poll interval of their upload, not an hour
 *   later.
 * - A process stopped for an hour while a poll of its first task was out (its monotonic clock
 *   steered an hour forward): that answer moves the aim at most twofold, so the next files are
 *   still polled within a second.
 *
 * Waits are on events (uploads answered, polls sent, rows archived); the one bound on time is the
 * few seconds a poll may take after its upload, which an hour-long aim exceeds by far.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { DocexClient } from '@docex/shared';
import { createNodeClient } from '@docex/shared/node';
import type { RunningDaemon } from '../../../daemon/src/app/daemon.ts';
import { invoice, makeWorld, SECRET, until, type World } from '../helpers.ts';

const HOUR = 3_600_000;
const INTERVAL_MS = 500;
/** Far below the hour a learnt downtime would add, far above a poll interval on a busy machine. */
const PROMPT_MS = 10_000;

let world: World | undefined;
afterEach(async () => {
  await world?.cleanup();
  world = undefined;
});

async function pollWorld(): Promise<World> {
  const w = await makeWorld({ taskDelayMs: 100 });
  const yaml = await readFile(w.configFile, 'utf8');
  await writeFile(
    w.configFile,
    yaml.replace(
      'poll: { interval_ms: 50, max_interval_ms: 200 }',
      `poll: { interval_ms: ${INTERVAL_MS}, max_interval_ms: 2000 }`,
    ),
  );
  return w;
}

/**
 * The daemon's client, watched: when each file's upload was answered and each of its polls went
 * out (performance.now()), how long after the answer the daemon had scheduled the first poll (its
 * row, read as the poll goes out, once `watch(daemon)` was called), and polls held back while
 * `hold()` is in force (an answer that arrives only once `release()` is called, as one does to a
 * process stopped while its request was out).
 */
function watchedClient(w: World) {
  const client: DocexClient = createNodeClient({
    baseUrl: w.emulator.url,
    apiKey: SECRET,
    retry: { initialDelayMs: 20, maxRetries: 2 },
  });
  const answeredAt = new Map<string, number>();
  const taskOf = new Map<string, string>();
  const pollsOf = new Map<string, number[]>(); // task id -> when each poll went out
  const scheduledOf = new Map<string, number>(); // task id -> first poll's due time after the answer
  let daemon: RunningDaemon | undefined;
  let gate: { open: Promise<void>; release: () => void } | undefined;
  const upload = client.uploadFile.bind(client);
  client.uploadFile = async (input, options) => {
    const answer = await upload(input, options);
    const name = input.files[0]!.fileName!;
    answeredAt.set(name, performance.now());
    taskOf.set(name, answer.task_ids[0]!);
    return answer;
  };
  const fetchTask = client.fetchTasksResults.bind(client);
  client.fetchTasksResults = async (input, options) => {
    pollsOf.set(input.task_id, [...(pollsOf.get(input.task_id) ?? []), performance.now()]);
    const row = daemon?.db.db
      .prepare('SELECT next_at, uploaded_at FROM files WHERE task_id = ? AND poll_interval_ms = 0')
      .get(input.task_id) as { next_at: number; uploaded_at: number } | undefined;
    if (row && !scheduledOf.has(input.task_id)) scheduledOf.set(input.task_id, row.next_at - row.uploaded_at);
    await gate?.open;
    return fetchTask(input, options);
  };
  return {
    client,
    answered: (name: string) => answeredAt.get(name),
    polls: (name: string) => pollsOf.get(taskOf.get(name) ?? '') ?? [],
    scheduled: (name: string) => scheduledOf.get(taskOf.get(name) ?? ''),
    watch(running: RunningDaemon) {
      daemon = running;
    },
    hold() {
      let release!: () => void;
      const open = new Promise<void>((resolve) => (release = resolve));
      gate = { open, release };
    },
    release() {
      gate?.release();
      gate = undefined;
    },
  };
}

type Watched = ReturnType<typeof watchedClient>;

const archived = (daemon: RunningDaemon, name: string) =>
  daemon.db.files.inState('archived').some((r) => r.rel === name);

/** When the file's first poll is due after its upload's answer, as the daemon scheduled it (ms). */
function scheduledFirstPoll(daemon: RunningDaemon, name: string): string {
  const row = daemon.db.db
    .prepare('SELECT next_at, uploaded_at, poll_interval_ms FROM files WHERE rel = ?')
    .get(name) as { next_at: number; uploaded_at: number | null; poll_interval_ms: number } | undefined;
  if (!row || row.uploaded_at === null || row.poll_interval_ms !== 0) return 'not known';
  return `${row.next_at - row.uploaded_at} ms`;
}

/**
 * Drops each file in turn and waits for its first poll: it must go out within PROMPT_MS of the
 * upload's answer, find the task final (one poll) and the file be archived. Returns when each
 * first poll was due after the upload's answer, as the daemon scheduled it.
 */
async function dropOneByOne(w: World, daemon: RunningDaemon, watched: Watched, names: string[]) {
  watched.watch(daemon);
  const scheduled: number[] = [];
  for (const name of names) {
    await writeFile(join(w.dir, 'inbox', name), invoice(name));
    await until(`${name} uploaded`, () => watched.answered(name) !== undefined);
    await until(`${name}'s first poll`, () => watched.polls(name).length > 0, PROMPT_MS).catch(() => {
      throw new Error(
        `${name} was not polled within ${PROMPT_MS} ms of its upload's answer; its first poll is due ${scheduledFirstPoll(daemon, name)} after it`,
      );
    });
    await until(`${name} archived`, () => archived(daemon, name));
    const sentAfter = Math.round(watched.polls(name)[0]! - watched.answered(name)!);
    expect(
      watched.polls(name),
      `${name}: one poll, sent ${sentAfter} ms after the upload's answer`,
    ).toHaveLength(1);
    scheduled.push(watched.scheduled(name)!);
  }
  return scheduled;
}

describe('poll timing across time docex-sync was not running', () => {
  it('a restart an hour after an upload: that task teaches nothing, each later file is polled once within the interval', async () => {
    const w = await pollWorld();
    world = w;
    // The first run uploads a.txt and is stopped while its first poll is out (never answered).
    const firstClient = watchedClient(w);
    firstClient.hold();
    const first = await w.start({ client: firstClient.client });
    await writeFile(join(w.dir, 'inbox', 'a.txt'), invoice('A-1'));
    await until('a.txt polled by the first run', () => firstClient.polls('a.txt').length > 0);
    expect(archived(first, 'a.txt')).toBe(false);
    await first.stop();

    // An hour later: the second run's clock starts an hour ahead of the first's.
    const watched = watchedClient(w);
    const daemon = await w.start({
      client: watched.client,
      daemon: { wallClock: () => Date.now() + HOUR },
    });
    await until('a.txt archived by the second run', () => archived(daemon, 'a.txt'));
    const scheduled = await dropOneByOne(w, daemon, watched, ['b.txt', 'c.txt', 'd.txt']);
    // b.txt knows nothing from a.txt: the fixed first poll. The next aim at what b.txt took, an
    // answer after a 500-ms poll; at most twice the poll before on a machine busy enough to delay it.
    expect(scheduled[0]).toBe(INTERVAL_MS);
    for (const ms of scheduled) expect(ms).toBeLessThanOrEqual(2 * INTERVAL_MS);
    expect(daemon.db.fileCounts.counts().failed).toBe(0);
  });

  it('a process stopped an hour while its first poll was out: the next files are polled within twice the interval', async () => {
    const w = await pollWorld();
    world = w;
    let stoppedFor = 0;
    const watched = watchedClient(w);
    const daemon = await w.start({
      client: watched.client,
      daemon: { monotonic: () => performance.now() + stoppedFor },
    });
    watched.hold();
    await writeFile(join(w.dir, 'inbox', 'a.txt'), invoice('A-1'));
    await until('a.txt polled', () => watched.polls('a.txt').length > 0);
    // SIGSTOP for an hour, as the monotonic clock counts it; then the held answer arrives.
    stoppedFor = HOUR;
    watched.release();
    await until('a.txt archived', () => archived(daemon, 'a.txt'));
    const scheduled = await dropOneByOne(w, daemon, watched, ['b.txt', 'c.txt', 'd.txt']);
    // The hour-late answer moved the aim from the first poll's 500 ms to 1 s at most.
    for (const ms of scheduled) expect(ms).toBeLessThanOrEqual(2 * INTERVAL_MS);
    expect(daemon.db.fileCounts.counts().failed).toBe(0);
  });
});
