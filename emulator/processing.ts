/** What happens to an uploaded file: IN PROGRESS, then DONE / FAILED / DUPLICATE after the task delay. */
import { randomUUID } from 'node:crypto';
import type { Ctx } from './routing.ts';
import { extract, readFile, sha256Of } from './extract.ts';
import type { Company, Document, Task, Template } from './state.ts';

export interface Upload {
  bytes: Buffer;
  fileName: string;
  contentType: string;
}

export function newTask(ctx: Ctx, company: Company): Task {
  const task: Task = {
    id: randomUUID(),
    companyId: company.id,
    status: 'IN PROGRESS',
    statusMessage: 'Processing',
    documentId: null,
    documentName: null,
    childTaskIds: null,
    createdAt: ctx.now(),
  };
  ctx.world.tasks.set(task.id, task);
  return task;
}

/** The template an upload is extracted with: template_id, else the folder's first, else the newest. */
export function chooseTemplate(
  ctx: Ctx,
  company: Company,
  templateId?: number,
  folderId?: number,
): Template | undefined {
  const mine = [...ctx.world.templates.values()].filter((t) => t.companyId === company.id);
  if (templateId !== undefined) return mine.find((t) => t.id === templateId);
  if (folderId !== undefined) return ctx.world.templatesOf(folderId)[0];
  return mine.sort((a, b) => b.createdAt - a.createdAt || b.id - a.id)[0];
}

export function finish(
  ctx: Ctx,
  task: Task,
  upload: Upload,
  company: Company,
  template: Template | undefined,
  replaceDocId: number | undefined,
  metadata: string | null,
) {
  const { world } = ctx;
  const fail = (message: string) => {
    task.status = 'FAILED';
    task.statusMessage = message;
  };
  const read = readFile(upload.bytes);
  if (read.kind === 'unreadable') return fail(read.reason);
  if (!template || !world.templates.has(template.id))
    return fail('No template available: create a template or give template_id / folder_id');

  const sha256 = sha256Of(upload.bytes);
  const fileKey = `${company.id}-${sha256}`;
  if (replaceDocId === undefined) {
    const existing = [...world.documents.values()].find(
      (d) => d.companyId === company.id && d.fileKey === fileKey,
    );
    if (existing) {
      task.status = 'DUPLICATE';
      task.statusMessage = `Duplicate of document ${existing.id} (${existing.name})`;
      task.documentId = existing.id;
      task.documentName = existing.name;
      return;
    }
  }
  world.fileBytes.set(fileKey, upload.bytes);
  world.fileInfo.set(fileKey, { sha256, size: upload.bytes.length, deleted: false });

  const now = ctx.now();
  const extraction = extract(read.text, template, world.fieldsOf(template.id), {
    documentName: upload.fileName,
    documentDate: new Date(now).toISOString().slice(0, 10),
    sha256,
  });
  const previous = replaceDocId === undefined ? undefined : world.documents.get(replaceDocId);
  const doc: Document = {
    id: previous?.id ?? world.nextId('document'),
    companyId: company.id,
    templateId: template.id,
    name: upload.fileName,
    contentType: upload.contentType,
    fileKey,
    rawText: read.text,
    metadata: metadata ?? previous?.metadata ?? null,
    taskId: task.id,
    createdAt: previous?.createdAt ?? now,
    updatedAt: now,
    extractedVersion: template.version,
    extraction,
  };
  world.documents.set(doc.id, doc);
  task.status = 'DONE';
  task.statusMessage = 'Extraction completed';
  task.documentId = doc.id;
  task.documentName = doc.name;
}

/** Re-extracts from the stored raw text (OCR is never re-run). */
export function rerun(ctx: Ctx, doc: Document) {
  const template = ctx.world.templates.get(doc.templateId)!;
  const info = doc.fileKey ? ctx.world.fileInfo.get(doc.fileKey) : undefined;
  doc.extraction = extract(doc.rawText, template, ctx.world.fieldsOf(template.id), {
    documentName: doc.name,
    documentDate: new Date(doc.createdAt).toISOString().slice(0, 10),
    sha256: info?.sha256 ?? '0'.repeat(64),
  });
  doc.extractedVersion = template.version;
  doc.updatedAt = ctx.now();
}
