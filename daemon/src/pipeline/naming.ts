/**
 * A file's own names, decided the first time the document's data is read and kept in the row: a
 * replay after a crash, the archive step after a restart, an approval and a rerun use the same
 * names (the results step asks for them before it writes).
 */
import { basename } from 'node:path';
import { generalFieldsOf, type DocumentData } from '@docex/shared';
import type { WatchConfig } from '../config/config.ts';
import { settingsOfRoute } from '../config/route-settings.ts';
import { parseNamePattern, renderName, type NamePattern, type NameValues } from '../common/names.ts';
import type { FileRow } from '../domain/lifecycle.ts';
import { resultBase } from '../outputs/result-set.ts';
import type { ResultTarget } from '../outputs/results.ts';
import type { StepHost } from './step-host.ts';

/** Name patterns parsed once (the config checked them when it was read). */
const patterns = new Map<string, NamePattern>();
function namePattern(source: string): NamePattern {
  let pattern = patterns.get(source);
  if (!pattern) patterns.set(source, (pattern = parseNamePattern(source)));
  return pattern;
}

/** Where a watch's result sets are: output, and review_dir where held ones wait before they go there. */
const resultTargets = (watch: WatchConfig): [ResultTarget, ...ResultTarget[]] => [
  watch,
  ...(watch.review_dir ? [{ ...watch, output: watch.review_dir }] : []),
];

/**
 * The row with its names. Its result base (result_name's, else "<name>.doc-<id>") is one no
 * other file's set holds, "R-1 (2)" when the first is taken, even by a file of the same bytes (the
 * same document); archive_name's path for the original (its free name is found when it moves).
 * The date parts are those of the file's discovery, not of the write.
 */
export async function named(
  host: StepHost,
  watch: WatchConfig,
  row: FileRow,
  data: DocumentData,
): Promise<FileRow> {
  if (row.result_base !== null) return row;
  // What the patterns are filled with, made once and only for a watch that has one.
  let filled: Promise<NameValues> | undefined;
  const values = () =>
    (filled ??= host.results.layouts.get(data.template_id).then((layout) => ({
      date: new Date(row.discovered_at),
      templateId: data.template_id,
      templateName: layout?.name,
      documentId: data.document_id,
      originalName: basename(row.path),
      fields: new Map(generalFieldsOf(data).map((f) => [f.name, f.value])),
      missing: watch.name_missing,
    })));
  // A route's own names, or its watch's when it sends to the watch's template (route-settings.ts).
  const { archive_name, result_name } = settingsOfRoute(watch, row.route);
  const archiveRel =
    row.archive_rel ?? (archive_name ? renderName(namePattern(archive_name), await values()) : null);
  const wanted = result_name
    ? renderName(namePattern(result_name), await values())
    : resultBase(basename(row.path), data.document_id);
  const base = await host.results.freeBase(
    resultTargets(watch),
    wanted,
    { fileId: row.id, documentId: data.document_id, source: row.path },
    basesOfOtherFiles(host, watch, row, data.document_id),
  );
  return host.apply(row, { kind: 'named', archiveRel, resultBase: base }).row;
}

/**
 * The bases other finished files of this document (the same bytes) recorded in this output. A set
 * on disk says which document and source it is of, but a file dropped again at the same path has
 * both the same; and an older file's set may be gone from disk (pruned) while its row names it.
 * (One waiting for review is on disk in review_dir; one on its way holds its base in this process.)
 */
function basesOfOtherFiles(
  host: StepHost,
  watch: WatchConfig,
  row: FileRow,
  documentId: number,
): (base: string) => boolean {
  const bases = new Set<string>();
  for (const other of host.db.files.filesOfDocuments([documentId])) {
    if (other.id === row.id || host.watches.get(other.watch)?.output !== watch.output) continue;
    bases.add(other.result_base ?? resultBase(basename(other.path), documentId));
  }
  return (base) => bases.has(base);
}
