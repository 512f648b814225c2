/**
 * The state DB is written through its repositories (daemon/src/store/state.ts lists them): each
 * table the migrations create is written (INSERT, UPDATE, DELETE, REPLACE) by exactly one file of
 * daemon/src/store/, and by no file outside it; a table kept by triggers is written by none. The
 * kv table's keys stay inside store/ too: the rest of the daemon asks a repository's typed method.
 * Read from the sources as text, comments left out; the checker is proven on a planted tree.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { sourceFiles } from './imports.ts';

const repo = join(import.meta.dirname, '../..');
const STORE = 'daemon/src/store/';
/** The schema: its statements write tables too (a backfill, a trigger), as the schema's own. */
const MIGRATIONS = `${STORE}migrations.ts`;

/** Tables no repository writes, and why. */
const TRIGGER_KEPT: Record<string, string> = {
  rest_tallies: 'kept by triggers on files (schema 11): written whenever files.ts writes a row at rest',
};

/** A write's table: a plain name (quoted or not), or `${` when the name is made at run time. */
const TABLE = String.raw`"?(\$\{|\w+)"?`;
const WRITES = [
  new RegExp(String.raw`\bINSERT\s+(?:OR\s+\w+\s+)?INTO\s+${TABLE}`, 'gi'),
  new RegExp(String.raw`\bREPLACE\s+INTO\s+${TABLE}`, 'gi'),
  new RegExp(String.raw`\bUPDATE\s+(?:OR\s+\w+\s+)?${TABLE}\s+SET\b`, 'gi'),
  new RegExp(String.raw`\bDELETE\s+FROM\s+${TABLE}`, 'gi'),
];
/** The kv table's door: its keys and its raw accessors (store/kv.ts). */
const KV_USE = /\bKV\.\w+|\.(?:getValue|setValue|deleteValue)\(/g;

/** The text without its comments (a comment may say "DELETE FROM files" of what the code does). */
const code = (text: string) => text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`\\])\/\/.*$/gm, '$1');

function tablesOf(root: string): string[] {
  const text = readFileSync(join(root, MIGRATIONS), 'utf8');
  return [...text.matchAll(/CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?"?(\w+)"?/gi)].map((m) => m[1]!);
}

function scan(root: string, files: string[], triggerKept: Record<string, string>) {
  const problems: string[] = [];
  const tables = tablesOf(root);
  const writers = new Map<string, Set<string>>(tables.map((t) => [t, new Set()]));
  for (const file of files) {
    if (!file.startsWith('daemon/src/') || file === MIGRATIONS) continue;
    const text = code(readFileSync(join(root, file), 'utf8'));
    for (const pattern of WRITES)
      for (const m of text.matchAll(pattern)) {
        const table = m[1]!;
        if (table === '${')
          problems.push(`${file}: writes a table named at run time (${m[0]}): name it in the SQL`);
        else if (!file.startsWith(STORE))
          problems.push(`${file}: writes table ${table} outside ${STORE}: ask its repository`);
        else if (!writers.has(table))
          problems.push(`${file}: writes table ${table}, which no migration creates`);
        else writers.get(table)!.add(file);
      }
    if (!file.startsWith(STORE))
      for (const m of text.matchAll(KV_USE))
        problems.push(
          `${file}: uses the kv table (${m[0]}) outside ${STORE}: give the value a typed method there`,
        );
  }
  for (const [table, by] of writers) {
    const names = [...by].sort().join(', ');
    if (table in triggerKept) {
      if (by.size > 0) problems.push(`table ${table} is kept by triggers, yet written by ${names}`);
    } else if (by.size === 0) problems.push(`table ${table}: no repository in ${STORE} writes it`);
    else if (by.size > 1)
      problems.push(`table ${table}: written by ${by.size} files (${names}): one repository only`);
  }
  for (const table of Object.keys(triggerKept))
    if (!writers.has(table))
      problems.push(`table ${table}: named as trigger-kept, but no migration creates it`);
  return { problems, writers: new Map([...writers].map(([t, by]) => [t, [...by].sort()])) };
}

describe('the writers of the state DB', () => {
  test('each table has one writer, a repository in store/, and kv stays inside store/', () => {
    const files = sourceFiles(repo);
    // The writers named, so that a walk that finds nothing (a moved migrations file) fails.
    const { problems, writers } = scan(repo, files, TRIGGER_KEPT);
    expect(problems).toEqual([]);
    expect(Object.fromEntries(writers)).toMatchObject({
      files: [`${STORE}files.ts`],
      kv: [`${STORE}kv.ts`],
      mail_attachments: [`${STORE}mail.ts`],
      audit: [`${STORE}audit.ts`],
      rest_tallies: [],
    });
  });

  test('a planted tree: two writers, a writer outside store/, no writer, a run-time name, kv outside', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'docex-writers-'));
    try {
      const put = async (path: string, text: string) => {
        await mkdir(join(dir, path, '..'), { recursive: true });
        await writeFile(join(dir, path), text);
      };
      await put(
        MIGRATIONS,
        'const M = [`CREATE TABLE a (x); CREATE TABLE IF NOT EXISTS b (x); CREATE TABLE "c" (x);\n' +
          ' CREATE TABLE t (x); CREATE TABLE lone (x); INSERT INTO t SELECT 1; UPDATE a SET x = 1;`];\n',
      );
      await put(
        `${STORE}a.ts`,
        'const s = `INSERT OR REPLACE INTO a (x) VALUES (?)`;\n// DELETE FROM b: a comment\n',
      );
      await put(`${STORE}also-a.ts`, "const s = 'update a set x = 2 where x = 1';\n");
      await put(
        `${STORE}b.ts`,
        'const s = `DELETE FROM b WHERE x = ?`;\nconst t = `REPLACE INTO "c" VALUES (1)`;\n',
      );
      await put(`${STORE}dynamic.ts`, 'const s = (t: string) => `DELETE FROM ${t}`;\n');
      await put(`${STORE}tallies.ts`, 'const s = `UPDATE t SET x = 2`;\nconst k = KV.holder;\n');
      await put(`${STORE}ghost.ts`, 'const s = `INSERT INTO nowhere VALUES (1)`;\n');
      await put(
        'daemon/src/pipeline/step.ts',
        "const s = `UPDATE b SET x = 3`;\nconst v = db.getValue(KV.pullCursor);\nconst ok = 'ON CONFLICT DO UPDATE SET x = 1';\n",
      );
      await put('bench/fill.ts', 'const s = `INSERT INTO a VALUES (1)`;\n');
      execFileSync('git', ['init', '-q'], { cwd: dir });
      const kept = { t: 'triggers', gone: 'was a table' };
      expect(scan(dir, sourceFiles(dir), kept).problems.sort()).toEqual([
        'daemon/src/pipeline/step.ts: uses the kv table (.getValue() outside daemon/src/store/: give the value a typed method there',
        'daemon/src/pipeline/step.ts: uses the kv table (KV.pullCursor) outside daemon/src/store/: give the value a typed method there',
        'daemon/src/pipeline/step.ts: writes table b outside daemon/src/store/: ask its repository',
        'daemon/src/store/dynamic.ts: writes a table named at run time (DELETE FROM ${): name it in the SQL',
        'daemon/src/store/ghost.ts: writes table nowhere, which no migration creates',
        'table a: written by 2 files (daemon/src/store/a.ts, daemon/src/store/also-a.ts): one repository only',
        'table gone: named as trigger-kept, but no migration creates it',
        'table lone: no repository in daemon/src/store/ writes it',
        'table t is kept by triggers, yet written by daemon/src/store/tallies.ts',
      ]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
