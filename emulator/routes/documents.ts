/** Documents: listing with the five filters, data, original files, raw text, ZIP batches, delete, rerun. */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import yazl from 'yazl';
import { HttpError, owned, route, type Ctx } from '../routing.ts';
import { rerun } from '../processing.ts';
import type { Document } from '../state.ts';
import { Checker, ValidationFailed } from '../validation.ts';

const batchError = (
  status: number,
  error_code: string,
  error_type: string,
  message: string,
  id_type: string | null = null,
  id: number | string | null = null,
) => new HttpError(status, { error_code, error_type, message, id_type, id });

/** RFC 6266: an ASCII fallback plus filename* for the real (UTF-8) name. */
export function contentDisposition(name: string) {
  const ascii = name.replace(/[^\x20-\x7e]/g, '_').replace(/["\\]/g, '_');
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(name)}`;
}

export function registerDocuments(app: FastifyInstance, ctx: Ctx) {
  const { world } = ctx;
  const mine = (req: FastifyRequest) =>
    [...world.documents.values()].filter((d) => d.companyId === req.company.id);

  route(app, 'GET', '/v1/fetch_documents/', 'fetch_documents', (req) => {
    const c = new Checker({ query: req.query });
    const start = c.date('query', 'start_date');
    const end = c.date('query', 'end_date');
    const folderId = c.int('query', 'folder_id');
    const templateId = c.int('query', 'template_id');
    const since = c.datetime('query', 'updated_since');
    c.done();
    const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
    return mine(req)
      .filter((d) => !start || day(d.createdAt) >= day(start.getTime()))
      .filter((d) => !end || day(d.createdAt) <= day(end.getTime()))
      .filter(
        (d) =>
          folderId === undefined ||
          folderId === null ||
          world.templates.get(d.templateId)?.folderId === folderId,
      )
      .filter((d) => templateId === undefined || templateId === null || d.templateId === templateId)
      .filter((d) => !since || Math.max(d.createdAt, d.updatedAt) >= since.getTime())
      .map((d) => d.id)
      .sort((a, b) => a - b);
  });

  route(app, 'GET', '/v1/fetch_document_data/', 'fetch_document_data', (req) => {
    const c = new Checker({ query: req.query });
    const id = c.int('query', 'document_id', { required: true });
    c.done();
    const d = owned(world.documents, id!, req.company, 'Document');
    return {
      document_id: d.id,
      template_id: d.templateId,
      document_name: d.name,
      General_fields: d.extraction.General_fields,
      General_fields_list: d.extraction.General_fields_list,
      Line_fields: d.extraction.Line_fields,
      task_id: d.taskId,
      created_at: new Date(d.createdAt).toISOString(),
      updated_at: new Date(d.updatedAt).toISOString(),
      metadata: d.metadata,
    };
  });

  /** fetch_file / fetch_raw_text: exactly one of document_id and task_id. */
  const documentFor = (req: FastifyRequest): Document => {
    const c = new Checker({ query: req.query });
    const documentId = c.int('query', 'document_id');
    const taskId = c.str('query', 'task_id');
    c.done();
    const given = [documentId, taskId].filter((v) => v !== undefined && v !== null).length;
    if (given !== 1) {
      throw new ValidationFailed([
        {
          type: 'value_error',
          loc: ['query'],
          msg: `Value error, provide document_id or task_id, ${given === 0 ? 'one of the two is needed' : 'not both'}`,
          input: req.query,
        },
      ]);
    }
    if (documentId !== undefined && documentId !== null)
      return owned(world.documents, documentId, req.company, 'Document');
    const task = owned(world.tasks, taskId!, req.company, 'Task');
    if (task.status === 'IN PROGRESS')
      throw new HttpError(409, { detail: `Task ${task.id} is not finished yet` });
    const doc = task.documentId !== null ? world.documents.get(task.documentId) : undefined;
    if (!doc || doc.companyId !== req.company.id)
      throw new HttpError(404, { detail: `Task ${task.id} has no document` });
    return doc;
  };

  route(app, 'GET', '/v1/fetch_file/', 'fetch_file', (req, reply: FastifyReply) => {
    const doc = documentFor(req);
    const bytes =
      doc.fileKey && !world.fileInfo.get(doc.fileKey)?.deleted ? world.fileBytes.get(doc.fileKey) : undefined;
    if (!bytes) throw new HttpError(404, { detail: `File of document ${doc.id} not found` });
    return reply
      .header('content-type', doc.contentType)
      .header('content-disposition', contentDisposition(doc.name))
      .send(bytes);
  });

  route(app, 'GET', '/v1/fetch_raw_text/', 'fetch_raw_text', (req) => {
    const doc = documentFor(req);
    return { document_id: doc.id, task_id: doc.taskId, raw_text: doc.rawText };
  });

  route(app, 'POST', '/v1/fetch_files_batch/', 'fetch_files_batch', (req, reply: FastifyReply) => {
    const c = new Checker({ body: req.body }).bodyObject(req.body);
    const documentIds = c.intList('body', 'document_ids', { nullable: true }) ?? [];
    const taskIds = c.strList('body', 'task_ids', { nullable: true }) ?? [];
    c.done();
    if (documentIds.length === 0 && taskIds.length === 0) {
      throw batchError(400, 'BATCH_INVALID_INPUT', 'validation', 'Provide document_ids or task_ids');
    }
    // Every id is checked before the first byte is sent: the batch fails as a whole on the first error.
    const docs: Document[] = [];
    for (const id of documentIds) {
      const d = world.documents.get(id);
      if (!d)
        throw batchError(
          404,
          'DOCUMENT_NOT_FOUND',
          'invalid_id',
          `Document ${id} not found`,
          'document_id',
          id,
        );
      if (d.companyId !== req.company.id)
        throw batchError(
          403,
          'BATCH_PERMISSION_DENIED',
          'permission',
          `No permission for document ${id}`,
          'document_id',
          id,
        );
      docs.push(d);
    }
    for (const id of taskIds) {
      const t = world.tasks.get(id);
      if (!t) throw batchError(404, 'TASK_NOT_FOUND', 'invalid_id', `Task ${id} not found`, 'task_id', id);
      if (t.companyId !== req.company.id)
        throw batchError(
          403,
          'BATCH_PERMISSION_DENIED',
          'permission',
          `No permission for task ${id}`,
          'task_id',
          id,
        );
      // Rule 1 of the API document: a task that is not DONE (IN PROGRESS, FAILED, DUPLICATE) is not resolved.
      if (t.status !== 'DONE')
        throw batchError(
          422,
          'TASK_NOT_DONE',
          'validation',
          `Task ${id} is ${t.status}, not DONE`,
          'task_id',
          id,
        );
      const d = t.documentId !== null ? world.documents.get(t.documentId) : undefined;
      if (!d)
        throw batchError(
          422,
          'TASK_NO_DOCUMENT',
          'fetch_failed',
          `No file could be fetched for task ${id}`,
          'task_id',
          id,
        );
      docs.push(d);
    }
    const files = new Map<string, { name: string; bytes: Buffer }>();
    for (const d of docs) {
      const bytes =
        d.fileKey && !world.fileInfo.get(d.fileKey)?.deleted ? world.fileBytes.get(d.fileKey) : undefined;
      if (!bytes)
        throw batchError(
          404,
          'DOCUMENT_NO_FILE',
          'invalid_id',
          `File of document ${d.id} not found`,
          'document_id',
          d.id,
        );
      if (!files.has(d.fileKey!)) files.set(d.fileKey!, { name: d.name, bytes });
    }
    if (ctx.faults.config.failBatchFetch && ctx.faults.applies('fetch_files_batch')) {
      throw batchError(500, 'BATCH_FILE_FETCH_FAILED', 'fetch_failed', 'File retrieval failed');
    }
    const zip = new yazl.ZipFile();
    const used = new Set<string>();
    for (const { name, bytes } of files.values()) {
      let entry = name.replace(/^[\\/]+/, '').replace(/\.\.(\/|\\)/g, '') || 'file';
      for (let n = 2; used.has(entry); n++) entry = name.replace(/(\.[^.]*)?$/, (ext) => ` (${n})${ext}`);
      used.add(entry);
      zip.addBuffer(bytes, entry);
    }
    zip.end();
    return reply
      .header('content-type', 'application/zip')
      .header('content-disposition', 'attachment; filename="documents.zip"')
      .send(zip.outputStream);
  });

  route(app, 'DELETE', '/v1/delete_doc/', 'delete_doc', (req, reply: FastifyReply) => {
    const c = new Checker({ query: req.query });
    const id = c.int('query', 'doc_id', { required: true });
    const deleteFile = c.bool('query', 'delete_file', false);
    c.done();
    const d = owned(world.documents, id!, req.company, 'Document');
    world.documents.delete(d.id);
    if (deleteFile && d.fileKey) {
      const info = world.fileInfo.get(d.fileKey);
      if (info) info.deleted = true;
      world.fileBytes.delete(d.fileKey);
    }
    return reply.status(200).send();
  });

  route(app, 'POST', '/v1/rerun_documents/', 'rerun_documents', (req) => {
    const c = new Checker({ body: req.body }).bodyObject(req.body);
    const ids = c.intList('body', 'doc_ids', { required: true, min: 1, max: 500 });
    const override = c.bool('body', 'override_extraction', false);
    c.done();
    const result = { rerun: 0, not_rerun: 0, rerun_doc_ids: [] as number[], errors: [] as object[] };
    const refuse = (error_code: string, error_type: string, message: string, id: number) => {
      result.not_rerun++;
      result.errors.push({ error_code, error_type, message, id_type: 'document_id', id });
    };
    for (const id of ids!) {
      const d = world.documents.get(id);
      if (!d) refuse('DOCUMENT_NOT_FOUND', 'invalid_id', `Document ${id} not found`, id);
      else if (d.companyId !== req.company.id)
        refuse('DOCUMENT_PERMISSION_DENIED', 'permission', `No permission for document ${id}`, id);
      else if (!override && d.extractedVersion === world.templates.get(d.templateId)?.version) {
        refuse(
          'RERUN_NOT_NEEDED',
          'validation',
          `Document ${id} is up to date with its template (set override_extraction to force)`,
          id,
        );
      } else {
        rerun(ctx, d);
        result.rerun++;
        result.rerun_doc_ids.push(id);
      }
    }
    return result;
  });
}
