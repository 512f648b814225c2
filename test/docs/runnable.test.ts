/**
 * The guides' shell blocks marked `<!-- docs-test: runs -->` (test/docs/shell-blocks.ts), run as a
 * user types them: by bash in a throw-away folder, with `docex` and `docex-sync` on PATH as this
 * checkout's commands (what scripts/from-checkout.sh and `npm run docex` run), against an emulator
 * this file starts. Each block gets a fresh emulator and folder, so blocks cannot lean on each other.
 *
 * What a page leaves to the reader is given here, in small tables: PLACEHOLDERS (the service's
 * address, the key, the paths of a server), REPLACED_LINES (an install from the registry, a download,
 * the edit a comment asks for, a command that does not return), GIVEN (what a page assumes exists:
 * the account's template 3 and documents 1 to 12, invoice.pdf, the operator's edited config,
 * docex's profiles, failed files) and EXPECTED_EXITS (a non-zero exit by design). A block passes
 * when every command in it exits 0 (or as EXPECTED_EXITS says) and its CHECKS hold: what the page
 * says the commands print or do. A row no block uses fails the last test.
 */
import { spawn } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { startDaemon } from '../../daemon/src/app/daemon.ts';
import { createLogger } from '../../daemon/src/common/logging.ts';
import { loadConfig } from '../../daemon/src/config/config.ts';
import { startEmulator, type Emulator } from '../../emulator/index.ts';
import { createNodeClient } from '@docex/shared/node';
import { guideFiles, REPO, shellBlocks, where, type ShellBlock } from './shell-blocks.ts';

const ACME = 'demo-key-acme';
const GLOBEX = 'demo-key-globex';

interface World {
  emulator: Emulator;
  /** The throw-away folder: bin/ (the commands), home/, work/ (the current folder), and the server paths. */
  dir: string;
  work: string;
  env: Record<string, string>;
  client(key: string): ReturnType<typeof createNodeClient>;
}

/**
 * The placeholders the pages use, and what stands for them here. Each must be used by some block
 * that runs (a stale row fails the last test).
 */
const PLACEHOLDERS: Array<{ text: string; value: (w: World) => string; why: string }> = [
  { text: 'https://api.example.com', value: (w) => w.emulator.url, why: "the service's address" },
  { text: 'http://127.0.0.1:8080', value: (w) => w.emulator.url, why: '`npm run sandbox`’s address' },
  { text: 'DOCEX_API_KEY=...', value: () => `DOCEX_API_KEY=${ACME}`, why: "the company's key" },
  {
    text: '/etc/docex-sync/',
    value: (w) => `${w.dir}/etc/docex-sync/`,
    why: "the Debian package's config folder",
  },
  { text: '--config FILE', value: () => '--config docex-sync.yaml', why: 'the config file' },
  { text: '/tmp/', value: (w) => `${w.dir}/tmp/`, why: 'no file shared with other tests' },
  {
    text: '--template 12',
    value: () => '--template 3',
    why: "docs/daemon.md's template; the account's is 3",
  },
];

/** Lines a block may have that the test does in its own way, with why. */
const REPLACED_LINES: Array<{ line: RegExp; by: string; why: string }> = [
  {
    line: /^npm install -g docex-sync\b.*$/m,
    by: '# docex-sync: this checkout’s, on PATH',
    why: 'installs from the registry; the test runs the sources',
  },
  {
    line: /^npm install -g docex\b.*$/m,
    by: '# docex: this checkout’s, on PATH',
    why: 'installs from the registry; the test runs the sources',
  },
  {
    line: /^curl -o docex-sync\.yaml https:\/\/raw\.githubusercontent\.com\/docex\/docex\/main\/examples\/docex-sync\.yaml$/m,
    by: 'cp "$DOCS_REPO/examples/docex-sync.yaml" docex-sync.yaml',
    why: "GitHub's copy is this checkout's file; no internet here",
  },
  {
    line: /^# edit: api\.base_url .*$/m,
    by: 'edit-config docex-sync.yaml',
    why: 'the edit the comment asks for, done by bin/edit-config (writeEditConfig)',
  },
  {
    line: /^docex-sync run --config docex-sync\.yaml$/m,
    by:
      'docex-sync run --config docex-sync.yaml & cp invoice.pdf "$DOCS_DIR/srv/inbox/"; ' +
      'wait-for-file "$DOCS_DIR/srv/processed/**/invoice*"; kill -TERM $!; wait $!',
    why: 'run does not return: in the background until a dropped file is done (its result written, then it is archived), then SIGTERM (exit 0)',
  },
];

/**
 * Runs a block as a person types it: each line in turn, in one bash, whatever the one before
 * exited (no -e). Every command that exits non-zero is recorded (its line and code) through fd 3;
 * a syntax error ends bash with 2 before the final `exit 0`.
 */
async function sh(script: string, cwd: string, env: Record<string, string>) {
  const traced = `trap 'c=$?; echo "$((LINENO - 1)) $c" >&3' ERR\n${script}\nexit 0\n`;
  const child = spawn('bash', ['-o', 'pipefail', '-c', traced], {
    cwd,
    env,
    stdio: ['ignore', 'pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  let trace = '';
  child.stdout!.on('data', (d) => (stdout += d));
  child.stderr!.on('data', (d) => (stderr += d));
  (child.stdio[3] as NodeJS.ReadableStream).on('data', (d) => (trace += d));
  const code = await new Promise<number | string>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (exit, signal) => resolve(exit ?? `signal ${signal}`));
  });
  const lines = script.split('\n');
  const failed = trace
    .split('\n')
    .filter(Boolean)
    .map((entry) => {
      const [line, exit] = entry.split(' ').map(Number) as [number, number];
      return { line, exit, text: lines[line - 1] ?? '' };
    });
  return { code, stdout, stderr, failed };
}

/**
 * Commands of a block that exit non-zero by design in the state the page describes, with why.
 * Any other non-zero exit fails the block.
 */
const EXPECTED_EXITS: Array<{ file: string; command: string; exit: number; why: string }> = [
  {
    file: 'docs/daemon.md',
    command: 'docex-sync status --config',
    exit: 1,
    why: 'status exits 1 while anything needs attention (here: the failed files), docs/daemon.md',
  },
];

const used = new Set<string>();

function substitute(block: ShellBlock, world: World): string {
  let code = block.code;
  for (const row of REPLACED_LINES) {
    if (row.line.test(code)) {
      used.add(row.line.source);
      code = code.replace(row.line, row.by);
    }
  }
  // One pass, so that a value put in (a path under /tmp/) is not replaced again.
  const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const any = new RegExp(
    [...PLACEHOLDERS]
      .sort((a, b) => b.text.length - a.text.length)
      .map((row) => escape(row.text))
      .join('|'),
    'g',
  );
  return code.replace(any, (text) => {
    const row = PLACEHOLDERS.find((r) => r.text === text)!;
    used.add(row.text);
    return row.value(world);
  });
}

/**
 * What a page takes as given. `account`: the emulator with the account the pages talk about
 * (Acme: the test account, Globex: prod) and the files and configs below. `sandbox`: the emulator
 * as `npm run sandbox` starts it, empty (docs/emulator.md creates everything it uses, ids from 1).
 */
interface Given {
  emulator: 'account' | 'sandbox';
  /** docex's config file with profiles test and prod. */
  profiles?: true;
  /** What the page had the reader export earlier. */
  env?: (url: string) => Record<string, string>;
  /** Failed files in the watched folder's failed_dir, put there by docex-sync itself. */
  failed?: true;
  /** The current folder is a git repository. */
  git?: true;
}

const GIVEN: Record<string, Given> = {
  'docs/emulator.md': { emulator: 'sandbox' },
  // Pages that name docex's profiles: test (Acme) and prod (Globex) in ~/.config/docex/config.yaml,
  // each with its key file (docs/cli.md, "Configuration"). Others get no config file.
  'README.md': { emulator: 'account', profiles: true },
  // "kept in git": the folder is a repository (`git diff` after the edit).
  'docs/templates-as-code.md': { emulator: 'account', profiles: true, git: true },
  // "Configure": the key is never in the config, set DOCEX_API_KEY (the blocks after it assume so).
  // "Status, reruns, pulls" names failed files (invoice-*.pdf, scans/2026/x.pdf): a run has failed some.
  'docs/daemon.md': { emulator: 'account', env: () => ({ DOCEX_API_KEY: ACME }), failed: true },
  // "Install" exported both; the blocks after it assume so.
  'docs/cli.md': { emulator: 'account', env: (url) => ({ DOCEX_BASE_URL: url, DOCEX_API_KEY: ACME }) },
};

/**
 * Node's compile cache for the commands (keyed by each file's content, so never stale): kept in
 * node_modules/.cache between runs, it takes a command's start from about 0.5 s of CPU to 0.2 s.
 * The system project's (vitest.config.ts), shared with the other files that start the commands.
 */
const compileCache = process.env.NODE_COMPILE_CACHE ?? join(REPO, 'node_modules/.cache/docex-compile');

/**
 * docex-sync (in this process) takes three files the service cannot read (NUL bytes) from the
 * watched folder until all three are failed, then stops: the failed files the pages name.
 */
async function failSomeFiles(configFile: string, client: ReturnType<typeof createNodeClient>) {
  const config = loadConfig(configFile);
  const inbox = config.watch[0]!.path;
  const names = ['invoice-7.pdf', 'scans/2026/x.pdf', 'scan-9.pdf'];
  for (const name of names) {
    await mkdir(dirname(join(inbox, name)), { recursive: true });
    await writeFile(join(inbox, name), Buffer.from([0, 1, 2, 3, 0]));
  }
  const daemon = await startDaemon(config, client, createLogger('silent'));
  try {
    // Readiness: the daemon's own count of failed files (each failure is recorded before it is counted).
    await vi.waitFor(() => expect(daemon.db.fileCounts.counts().failed).toBe(names.length), {
      timeout: 60_000,
      interval: 50,
    });
  } finally {
    await daemon.stop();
  }
}

/**
 * bin/edit-config FILE: what daemon/README.md's quick start asks a person to edit in the example
 * config: api.base_url, one watched folder (template 3) with its output folders, and the optional
 * sections this machine has no use for (mailboxes, reruns, pull, notify, http) deleted.
 */
async function writeEditConfig(dir: string, url: string) {
  const script = `
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
const YAML = createRequire(${JSON.stringify(join(REPO, 'package.json'))})('yaml');
const file = process.argv[2];
const doc = YAML.parseDocument(readFileSync(file, 'utf8'));
const dir = ${JSON.stringify(dir)};
doc.set('state_db', dir + '/var/lib/docex-sync/state.db');
doc.setIn(['api', 'base_url'], ${JSON.stringify(url)});
doc.set('watch', [{ path: dir + '/srv/inbox', template_id: 3, stable_ms: 200, output: dir + '/srv/results',
  processed_dir: dir + '/srv/processed', failed_dir: dir + '/srv/failed' }]);
for (const key of ['mailboxes', 'reruns', 'pull', 'notify', 'http']) doc.delete(key);
writeFileSync(file, doc.toString());
`;
  await writeFile(join(dir, 'bin', 'edit-config.mjs'), script);
  await writeFile(
    join(dir, 'bin', 'edit-config'),
    `#!/bin/sh\nexec "${process.execPath}" "${join(dir, 'bin', 'edit-config.mjs')}" "$@"\n`,
  );
  await chmod(join(dir, 'bin', 'edit-config'), 0o755);
}

/** docex's profiles: test is Acme, prod is Globex, each with its key file; no default profile. */
async function writeProfiles(home: string, url: string) {
  await mkdir(join(home, '.config/docex'), { recursive: true });
  await writeFile(join(home, '.config/docex/test.key'), ACME);
  await writeFile(join(home, '.config/docex/prod.key'), GLOBEX);
  await writeFile(
    join(home, '.config/docex/config.yaml'),
    [
      'profiles:',
      `  test: { base_url: "${url}", api_key_file: test.key }`,
      `  prod: { base_url: "${url}", api_key_file: prod.key }`,
      '',
    ].join('\n'),
  );
}

async function startWorld(given: Given): Promise<World> {
  const emulator = await startEmulator({ port: 0, taskDelayMs: 20 });
  const dir = await mkdtemp(join(tmpdir(), 'docex-docs-'));
  const work = join(dir, 'work');
  const home = join(dir, 'home');
  for (const sub of ['bin', 'tmp', 'home', 'work', 'etc/docex-sync', 'srv/inbox', 'var/lib/docex-sync'])
    await mkdir(join(dir, sub), { recursive: true });
  // The repo's own commands, as scripts/from-checkout.sh runs them (with this Node).
  const wrapper = async (name: string, entry: string) => {
    await writeFile(
      join(dir, 'bin', name),
      `#!/bin/sh\nexec "${process.execPath}" "${join(REPO, entry)}" "$@"\n`,
    );
    await chmod(join(dir, 'bin', name), 0o755);
  };
  await wrapper('docex', 'cli/src/docex.ts');
  await wrapper('docex-sync', 'daemon/src/commands/docex-sync.ts');
  await writeEditConfig(dir, emulator.url);
  // A file matching the glob (** across folders) appears within 120 s (exit 0), or it did not (exit 1).
  await writeFile(
    join(dir, 'bin', 'wait-for-file'),
    '#!/bin/bash\nshopt -s globstar\nfor _ in $(seq 1200); do compgen -G "$1" >/dev/null && exit 0; sleep 0.1; done\nexit 1\n',
  );
  await chmod(join(dir, 'bin', 'wait-for-file'), 0o755);
  const client = (key: string) =>
    createNodeClient({ baseUrl: emulator.url, apiKey: key, retry: { maxRetries: 0 } });
  const env: Record<string, string> = {
    PATH: `${join(dir, 'bin')}:${process.env.PATH ?? '/usr/bin:/bin'}`,
    HOME: home,
    XDG_CONFIG_HOME: join(home, '.config'),
    TMPDIR: join(dir, 'tmp'),
    LANG: 'C.UTF-8',
    EDITOR: 'true', // `$EDITOR setup.yaml`: the user's edit, none here
    NODE_COMPILE_CACHE: compileCache,
    // For the replaced lines above: the throw-away folder and this checkout.
    DOCS_DIR: dir,
    DOCS_REPO: REPO,
    ...given.env?.(emulator.url),
  };
  if (given.emulator === 'sandbox') return { emulator, dir, work, env, client };

  // The test account: folders 1 and 2, template 3 (in folder 2) with two fields, documents 1 to 12.
  const acme = client(ACME);
  await acme.createFolder({ name: 'Invoices' });
  await acme.createFolder({ name: 'Receipts' });
  await acme.createTemplate({ folder_id: 1, name: 'Supplier invoice', number_locale: 'EU' });
  await acme.createTemplate({ folder_id: 2, name: 'Till receipt', number_locale: 'EU' });
  const template = await acme.createTemplate({ folder_id: 2, name: 'Credit note', number_locale: 'EU' });
  expect(template.id).toBe(3);
  await acme.createField({ template_id: 3, name: 'Total', type: 'General fields', format: 'total_price' });
  await acme.createField({
    template_id: 3,
    name: 'Description',
    type: 'Line fields',
    format: 'text',
    position: 1,
  });
  const seeds = [];
  for (let i = 1; i <= 12; i++) {
    const path = join(dir, 'tmp', `seed-${i}.txt`);
    await writeFile(path, `Total: ${i},50\nWidget ${i} | x\n`);
    seeds.push({ path });
  }
  const { tasks } = await acme.uploadAndWait({ files: seeds, template_id: 3 });
  expect(tasks.map((t) => t.document_id)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);

  // The files a user names: invoice.pdf, scan.png (content the emulator reads).
  await writeFile(join(work, 'invoice.pdf'), 'Total: 1.234,50\nWidget | x\nGadget | y\n');
  await writeFile(join(work, 'scan.png'), 'Total: 99,00\nCoffee | z\n');

  if (given.profiles) await writeProfiles(home, emulator.url);
  if (given.git) {
    const init = await sh('git init -q', work, env);
    expect(init.failed).toEqual([]);
  }

  // The operator's config, as edited from examples/docex-sync.yaml: one watched folder, template 3.
  const config = [
    `state_db: ${dir}/var/lib/docex-sync/state.db`,
    'api:',
    `  base_url: ${emulator.url}`,
    'poll: { interval_ms: 100, max_interval_ms: 500 }',
    'watch:',
    `  - path: ${dir}/srv/inbox`,
    '    template_id: 3',
    '    recursive: true',
    '    stable_ms: 100',
    `    output: ${dir}/srv/results`,
    `    processed_dir: ${dir}/srv/processed`,
    `    failed_dir: ${dir}/srv/failed`,
    'pull:',
    '  schedule: "30 3 * * *"',
    `  output: ${dir}/srv/pulled`,
    '',
  ].join('\n');
  await writeFile(join(dir, 'etc/docex-sync/docex-sync.yaml'), config);
  await writeFile(join(work, 'docex-sync.yaml'), config);
  if (given.failed) await failSomeFiles(join(work, 'docex-sync.yaml'), client(ACME));

  return { emulator, dir, work, env, client };
}

/**
 * What a block must do beyond exiting 0, by page and a line of the block: what the page says it
 * prints or changes. Each must match a block that runs.
 */
const CHECKS: Array<{ file: string; has: string; check: (w: World, out: string) => Promise<void> | void }> = [
  {
    file: 'docs/emulator.md',
    has: 'fetch_documents',
    check: (_w, out) => {
      expect(out).toMatch(/"task_id":"[^"]+"/); // upload_file: {"task_id":"..."}
      expect(out).toContain('[1]'); // fetch_documents: [1]
    },
  },
  {
    // The quick start's dropped file has its result, and the daemon stopped on SIGTERM (exit 0).
    file: 'daemon/README.md',
    has: 'docex-sync run --config',
    check: async (w) => {
      const results = (await readdir(join(w.dir, 'srv/results'))).filter((f) => f.endsWith('.json'));
      expect(results).toHaveLength(1);
      expect(results[0]).toMatch(/^invoice\b/);
      expect((await readdir(join(w.dir, 'srv/processed'), { recursive: true })).join(' ')).toContain(
        'invoice',
      );
    },
  },
  {
    // retry by name takes the two files it names, --all the one left.
    file: 'docs/daemon.md',
    has: "retry --config FILE 'invoice-*.pdf'",
    check: (_w, out) =>
      expect([...out.matchAll(/(\d+) failed file\(s\) re-queued/g)].map((m) => m[1])).toEqual(['2', '1']),
  },
  {
    file: 'README.md',
    has: 'templates apply setup.yaml',
    check: async (w) => expect(await templateNames(w, GLOBEX)).toEqual(await templateNames(w, ACME)),
  },
  {
    file: 'docs/templates-as-code.md',
    has: 'templates apply setup.yaml',
    check: async (w) => expect(await templateNames(w, GLOBEX)).toEqual(await templateNames(w, ACME)),
  },
];

async function templateNames(w: World, key: string) {
  const { folders } = await w.client(key).fetchAllFolders();
  return folders.flatMap((f) => (f.templates ?? []).map((t) => `${f.name}/${t.name}`)).sort();
}

/** Runs a block in a world: bash's result, the commands that failed unexpectedly, a report for messages. */
async function runBlock(block: ShellBlock, w: World) {
  const script = substitute(block, w);
  const run = await sh(script, w.work, w.env);
  const report = `${where(block)}:\n${script}\n--- stdout (end)\n${run.stdout.slice(-1500)}\n--- stderr\n${run.stderr}`;
  const unexpected = run.failed
    .filter((f) => {
      const row = EXPECTED_EXITS.find(
        (r) => r.file === block.file && f.text.includes(r.command) && f.exit === r.exit,
      );
      if (row) expectedUsed.add(row);
      return !row;
    })
    .map((f) => `line ${f.line} exited ${f.exit}: ${f.text}`);
  return { run, unexpected, report };
}

const runnable = guideFiles()
  .flatMap(shellBlocks)
  .filter((block) => block.marker !== null && block.marker !== 'malformed' && block.marker.kind === 'runs');
const checked = new Set<(typeof CHECKS)[number]>();
const expectedUsed = new Set<(typeof EXPECTED_EXITS)[number]>();
const ran = new Set<ShellBlock>();

describe('the guides’ shell blocks that run', () => {
  beforeAll(async () => {
    expect(runnable.length).toBeGreaterThan(0);
    await mkdir(compileCache, { recursive: true });
  });

  // Side by side: each block has its own emulator and folder; most of their time is processes starting.
  for (const block of runnable) {
    it.concurrent(
      `${where(block)} runs as written`,
      async () => {
        ran.add(block);
        const w = await startWorld(GIVEN[block.file] ?? { emulator: 'account' });
        try {
          const { run, unexpected, report } = await runBlock(block, w);
          expect(run.code, `bash exited ${run.code} (a syntax error?) in ${report}`).toBe(0);
          expect(unexpected, `commands that failed in ${report}`).toEqual([]);
          for (const row of CHECKS.filter((r) => r.file === block.file && block.code.includes(r.has))) {
            checked.add(row);
            await row.check(w, run.stdout);
          }
        } finally {
          await w.emulator.stop();
          await rm(w.dir, { recursive: true, force: true });
        }
        // A bound, not a wait: about 10 s on an idle machine, 90 s seen at load averages near 20.
      },
      300_000,
    );
  }

  // The harness itself: a block with a mistyped command, and one bash cannot parse, both fail.
  it.concurrent(
    'reports a planted broken command and a block bash cannot parse',
    async () => {
      const w = await startWorld({ emulator: 'sandbox' });
      try {
        const planted = (code: string): ShellBlock => ({
          file: 'planted.md',
          line: 1,
          info: 'sh',
          code,
          marker: { kind: 'runs' },
        });
        const typo = await runBlock(
          planted(
            'export DOCEX_BASE_URL=http://127.0.0.1:8080 DOCEX_API_KEY=demo-key-acme\ndocex folders lst\ndocex account check',
          ),
          w,
        );
        expect(typo.run.code).toBe(0);
        expect(typo.unexpected).toEqual(['line 2 exited 2: docex folders lst']);
        expect(typo.run.stdout).toContain('valid'); // the line after it still ran, as typed
        const unparsable = await runBlock(planted('docex account check )'), w);
        expect(unparsable.run.code).toBe(2);
      } finally {
        await w.emulator.stop();
        await rm(w.dir, { recursive: true, force: true });
      }
    },
    300_000,
  );

  it('uses every row of its tables (none is stale)', (ctx) => {
    // Only a run of every block uses every row (vitest -t runs some).
    if (ran.size < runnable.length) ctx.skip();
    const unused = [
      ...PLACEHOLDERS.filter((row) => !used.has(row.text)).map((row) => `placeholder ${row.text}`),
      ...REPLACED_LINES.filter((row) => !used.has(row.line.source)).map((row) => `line ${row.line.source}`),
      ...CHECKS.filter((row) => !checked.has(row)).map((row) => `check ${row.file} (${row.has})`),
      ...EXPECTED_EXITS.filter((row) => !expectedUsed.has(row)).map(
        (row) => `exit ${row.exit} of ${row.command}`,
      ),
    ];
    expect(unused).toEqual([]);
  });
});
