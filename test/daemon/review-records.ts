/**
 * One set of records per file, checked from what is on disk and in the state DB after a run
 * (test/daemon/outputs/review-random.test.ts): each file's review files while it is held, its
 * result files, daily CSV row and original once archived, its failed-folder entry with its
 * .error.json once failed, its review CSV and audit rows; and no record that names another file.
 * Returns the problems found, each a sentence naming the file and the record.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type { FileRow } from '../../daemon/src/domain/lifecycle.ts';
import type { ResultJson } from '../../daemon/src/outputs/results.ts';
import type { ReviewJson } from '../../daemon/src/outputs/review.ts';
import type { AuditRow } from '../../daemon/src/store/audit.ts';
import { csvRecords, jsonFiles, tree } from './review-helpers.ts';

/** What the test did that answered as done, by file id. */
export interface Decision {
  id: number;
  action: 'approve' | 'reject' | 'correct' | 'retry';
  /** For a correction: the value the Total was corrected to. */
  total?: string;
  /** The daemon died before it answered: done or not, either is right. */
  unanswered?: boolean;
}

/** The rows and the audit trail, read as another process would (read-only). */
export function readDb(stateDb: string): { rows: FileRow[]; audit: AuditRow[] } {
  const db = new Database(stateDb, { readonly: true, fileMustExist: true });
  try {
    return {
      rows: db.prepare('SELECT * FROM files ORDER BY id').all() as FileRow[],
      audit: db.prepare('SELECT * FROM audit ORDER BY id').all() as AuditRow[],
    };
  } finally {
    db.close();
  }
}

const sha = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');
const count = <T>(items: T[], pred: (t: T) => boolean) => items.filter(pred).length;

export async function recordProblems(
  dir: string,
  asked: Decision[],
  /** Every path each row was seen with (a retried file moves back into the watch, then on). */
  pathsOf: Map<number, Set<string>>,
): Promise<string[]> {
  const decisions = asked.filter((d) => !d.unanswered);
  const problems: string[] = [];
  const say = (s: string) => void problems.push(s);
  const { rows, audit } = readDb(join(dir, 'state', 'sync.db'));
  const byState = (s: FileRow['state']) => rows.filter((r) => r.state === s);
  for (const r of rows) {
    if (r.blocked) say(`#${r.id} ${r.path} is blocked: ${r.blocked}`);
    if (!['review', 'archived', 'failed'].includes(r.state)) say(`#${r.id} ${r.path} is ${r.state}`);
  }

  // Held: its review.json, original and result copies; nothing else in review_dir.
  const review = join(dir, 'to-review');
  const reviewFiles = new Set((await tree(review)).map((f) => join(review, f)));
  const held = await jsonFiles<ReviewJson>(review, '.review.json');
  const owned = new Set<string>();
  for (const r of byState('review')) {
    const path = join(review, `${r.result_base}.review.json`);
    const json = held.get(path);
    if (!json) {
      say(`#${r.id} ${r.path} waits without its review.json (${path})`);
      continue;
    }
    owned.add(path);
    if (json.source_file !== r.path)
      say(`${path}, the review of #${r.id} ${r.path}, names ${json.source_file}`);
    if (json.original !== r.review_path)
      say(`${path} says its original is ${json.original}, not ${r.review_path}`);
    const original = await readFile(json.original).catch(() => undefined);
    if (!original || sha(original) !== r.sha256)
      say(`#${r.id} ${r.path}: its original ${json.original} is not its bytes`);
    owned.add(json.original);
    for (const result of json.results) {
      owned.add(result);
      if (!reviewFiles.has(result)) say(`#${r.id} ${r.path}: ${result} is missing`);
      if (result.endsWith('.json')) {
        const data = JSON.parse(await readFile(result, 'utf8').catch(() => '{}')) as Partial<ResultJson>;
        if (data.source_file !== r.path) say(`${result} (held #${r.id} ${r.path}) names ${data.source_file}`);
      }
    }
  }
  for (const f of reviewFiles)
    if (!owned.has(f) && !/\/review-\d{4}-\d\d-\d\d\.csv$/.test(f))
      say(`${f} in review_dir is no held file's`);

  // Review CSV: a "needs review" row for each held file; a decision row per decision; none for a stranger.
  const reviewCsv = [...reviewFiles].filter((f) => /\/review-[\d-]+\.csv$/.test(f));
  const reviewRows = (await Promise.all(reviewCsv.map(csvRecords))).flat();
  for (const c of reviewRows) {
    const row = rows.find(
      (r) => String(r.document_id) === c.document_id && pathsOf.get(r.id)?.has(c.source_file!),
    );
    if (!row) say(`review CSV row ${c.source_file} (document ${c.document_id}, ${c.outcome}) is no file's`);
  }
  for (const r of byState('review'))
    if (
      count(
        reviewRows,
        (c) => c.outcome === 'needs review' && c.source_file === r.path && c.archived_to === r.review_path,
      ) !== 1
    )
      say(`#${r.id} ${r.path}: not exactly one "needs review" row in the review CSV`);
  const words = { approve: 'approved by', reject: 'rejected by', correct: 'approved, corrected by' };
  for (const d of decisions) {
    if (d.action === 'retry') continue;
    const r = rows.find((x) => x.id === d.id)!;
    const word = words[d.action];
    if (
      count(
        reviewRows,
        (c) => pathsOf.get(r.id)!.has(c.source_file ?? '') && (c.outcome ?? '').startsWith(word),
      ) < 1
    )
      say(`#${r.id} ${r.path}: no review CSV row "${word} ..."`);
  }

  // Archived: one result JSON, its two CSVs, one daily row, its original in processed_dir.
  const results = join(dir, 'results');
  const resultFiles = (await tree(results)).filter((f) => !f.startsWith('daily-'));
  const written = await jsonFiles<ResultJson>(results, '.json');
  const daily = (
    await Promise.all(
      (await tree(results)).filter((f) => f.startsWith('daily-')).map((f) => csvRecords(join(results, f))),
    )
  ).flat();
  const archived = byState('archived');
  if (resultFiles.length !== 3 * archived.length)
    say(`${resultFiles.length} result files for ${archived.length} archived files (3 each)`);
  for (const [path, json] of written) {
    const n = count(archived, (r) => r.path === json.source_file && r.archive_path === json.archived_to);
    if (n !== 1)
      say(`${path} (${json.source_file} -> ${json.archived_to}) is the result of ${n} archived files`);
  }
  for (const c of daily) {
    const n = count(archived, (r) => r.path === c.source_file && r.archive_path === c.archived_to);
    if (n !== 1) say(`daily CSV row ${c.source_file} -> ${c.archived_to} is the row of ${n} archived files`);
  }
  for (const r of archived) {
    const mine = [...written].filter(([, j]) => j.source_file === r.path && j.archived_to === r.archive_path);
    if (mine.length !== 1) say(`#${r.id} ${r.path}: ${mine.length} result JSONs`);
    const [path, json] = mine[0] ?? [];
    if (path && !path.endsWith(`/${r.result_base}.json`))
      say(`#${r.id} ${r.path}: its JSON is ${path}, not ${r.result_base}`);
    if (count(daily, (c) => c.source_file === r.path && c.archived_to === r.archive_path) !== 1)
      say(`#${r.id} ${r.path}: not exactly one daily CSV row`);
    const original = r.archive_path ? await readFile(r.archive_path).catch(() => undefined) : undefined;
    if (!original || sha(original) !== r.sha256)
      say(`#${r.id} ${r.path}: its original is not at ${r.archive_path}`);
    const correction = decisions.findLast((d) => d.id === r.id && d.action === 'correct');
    if (correction?.total !== undefined && json) {
      const total = json.document.General_fields?.Total as { value?: unknown } | undefined;
      const wanted = Number(correction.total.replace(',', '.'));
      if (total?.value !== wanted)
        say(`${path}: Total ${JSON.stringify(total?.value)}, corrected to ${correction.total}`);
      if (!json.corrections?.length) say(`${path}: no corrections listed`);
      const dailyRow = daily.find((c) => c.source_file === r.path && c.archived_to === r.archive_path);
      if (dailyRow && Number(dailyRow.Total) !== wanted)
        say(`daily row of #${r.id}: Total ${dailyRow.Total}, corrected to ${correction.total}`);
    }
  }
  const processed = (await tree(join(dir, 'processed'))).map((f) => join(dir, 'processed', f));
  for (const p of processed)
    if (count(archived, (r) => r.archive_path === p) !== 1)
      say(`${p} in processed_dir is not one archived file's`);

  // Failed: the file (unless it was gone) and its .error.json with its reason; nothing else.
  const failedDir = join(dir, 'failed');
  const failedFiles = (await tree(failedDir)).map((f) => join(failedDir, f));
  const failed = byState('failed');
  for (const r of failed) {
    const report = JSON.parse(await readFile(`${r.path}.error.json`, 'utf8').catch(() => '{}')) as {
      reason?: string;
    };
    if (report.reason !== r.reason)
      say(
        `#${r.id} ${r.path}: its .error.json says ${JSON.stringify(report.reason)}, not ${JSON.stringify(r.reason)}`,
      );
  }
  for (const f of failedFiles) {
    const own = f.endsWith('.error.json') ? f.slice(0, -'.error.json'.length) : f;
    if (count(failed, (r) => r.path === own) !== 1) say(`${f} in the failed folder is not one failed file's`);
  }

  // Audit: a row per decision, each naming its own file.
  for (const d of decisions) {
    const action = d.action === 'correct' ? ['correct', 'approve'] : [d.action];
    for (const a of action)
      if (count(audit, (x) => x.file_id === d.id && x.action === a) < 1)
        say(`#${d.id}: no audit row for ${a}`);
  }
  for (const a of audit)
    if (!a.file_id || !pathsOf.get(a.file_id)?.has(a.file))
      say(`audit row ${a.id} (${a.action} #${a.file_id}) names ${a.file}, never that file's path`);
  const per = (action: string) => count(audit, (x) => x.action === action);
  for (const action of ['approve', 'reject', 'retry'] as const) {
    const of = (d: Decision) => d.action === action || (action === 'approve' && d.action === 'correct');
    const [done, maybe] = [count(decisions, of), count(asked, of)];
    if (per(action) < done || per(action) > maybe)
      say(`${per(action)} audit rows for ${action}, ${done} done (${maybe - done} more asked, unanswered)`);
  }
  return problems;
}
