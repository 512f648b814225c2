/** check_api_key, upload_file, fetch_tasks_results and the datatable match agents' upload_csv. */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { HttpError, notFound, owned, route, type Ctx } from '../routing.ts';
import { sha256Of } from '../extract.ts';
import { chooseTemplate, finish, newTask, type Upload } from '../processing.ts';
import type { Task } from '../state.ts';
import { Checker, ValidationFailed } from '../validation.ts';

async function readMultipart(
  request: FastifyRequest,
): Promise<{ files: Map<string, Upload[]>; fields: Map<string, string> }> {
  if (!request.isMultipart()) {
    throw new ValidationFailed([
      { type: 'missing', loc: ['body'], msg: 'Field required (expected multipart/form-data)', input: null },
    ]);
  }
  const files = new Map<string, Upload[]>();
  const fields = new Map<string, string>();
  for await (const part of request.parts()) {
    if (part.type === 'file') {
      const bytes = await part.toBuffer();
      const list = files.get(part.fieldname) ?? [];
      list.push({
        bytes,
        fileName: part.filename || 'upload',
        contentType: part.mimetype || 'application/octet-stream',
      });
      files.set(part.fieldname, list);
    } else {
      fields.set(part.fieldname, String(part.value));
    }
  }
  return { files, fields };
}

export function taskOut(ctx: Ctx, task: Task) {
  const doc =
    task.documentId !== null && task.status !== 'FAILED'
      ? ctx.world.documents.get(task.documentId)
      : undefined;
  const data = task.status === 'DONE' || task.status === 'DUPLICATE' ? doc?.extraction : undefined;
  return {
    status: task.status,
    status_message: task.statusMessage,
    child_task_ids: task.childTaskIds,
    task_id: task.id,
    document_id: task.documentId,
    document_name: task.documentName,
    General_fields: data?.General_fields ?? null,
    Line_fields: data?.Line_fields ?? null,
    Fraud_verdict: data?.Fraud_verdict ?? null,
    Fraud_justification: data?.Fraud_justification ?? null,
    Fraud_score: data?.Fraud_score ?? null,
    Fraud_detection_tests: data?.Fraud_detection_tests ?? null,
  };
}

function looksLikeCsv(upload: Upload): { columns: string[]; rows: number } | undefined {
  const nameOk =
    /\.(csv|txt)$/i.test(upload.fileName) || /csv|text\/plain|ms-excel/i.test(upload.contentType);
  if (!nameOk || upload.bytes.length === 0 || upload.bytes.includes(0)) return undefined;
  const text = upload.bytes.toString('utf8');
  if (text.includes('\uFFFD')) return undefined;
  const lines = text.split(/\r?\n/).filter((l) => l.trim() !== '');
  if (lines.length === 0) return undefined;
  const delimiter = [',', ';', '\t'].find((d) => lines[0]!.includes(d)) ?? ',';
  const columns = lines[0]!.split(delimiter).map((c) => c.trim().replace(/^"|"$/g, ''));
  return { columns, rows: lines.length - 1 };
}

export function registerTasks(app: FastifyInstance, ctx: Ctx) {
  const { world } = ctx;

  route(app, 'POST', '/v1/check_api_key/', 'check_api_key', (req) => ({
    valid: true,
    company_id: req.company.id,
    company_name: req.company.name,
  }));

  route(app, 'POST', '/v1/upload_file/', 'upload_file', async (req) => {
    const c = new Checker({ query: req.query });
    const folderId = c.int('query', 'folder_id') ?? undefined;
    const templateId = c.int('query', 'template_id') ?? undefined;
    const docId = c.int('query', 'doc_id') ?? undefined;
    c.done();
    const company = req.company;
    if (folderId !== undefined) owned(world.folders, folderId, company, 'Folder');
    if (templateId !== undefined) owned(world.templates, templateId, company, 'Template');
    const replaced = docId !== undefined ? owned(world.documents, docId, company, 'Document') : undefined;

    const { files, fields } = await readMultipart(req);
    const uploads = files.get('files') ?? [];
    if (uploads.length === 0)
      throw new ValidationFailed([
        { type: 'missing', loc: ['body', 'files'], msg: 'Field required', input: null },
      ]);
    if (replaced && uploads.length > 1) {
      throw new ValidationFailed([
        {
          type: 'value_error',
          loc: ['query', 'doc_id'],
          msg: 'Value error, doc_id replaces one document: send exactly one file',
          input: docId,
        },
      ]);
    }
    const max = ctx.faults.config.maxUploadBytes;
    if (max !== undefined && ctx.faults.applies('upload_file') && uploads.some((u) => u.bytes.length > max)) {
      throw new HttpError(413, { detail: `Upload larger than ${max} bytes` });
    }
    const metadata = fields.get('metadata') ?? null;
    // Replacing a document's file keeps its template unless the upload names another one.
    const template =
      replaced && templateId === undefined && folderId === undefined
        ? world.templates.get(replaced.templateId)
        : chooseTemplate(ctx, company, templateId, folderId);

    const tasks = uploads.map((upload) => {
      ctx.stats.upload(sha256Of(upload.bytes));
      const task = newTask(ctx, company);
      ctx.later(() => finish(ctx, task, upload, company, template, replaced?.id, metadata));
      return task;
    });
    if (tasks.length === 1) return { task_id: tasks[0]!.id };

    const parent = newTask(ctx, company);
    parent.childTaskIds = tasks.map((t) => t.id);
    parent.statusMessage = `Processing ${tasks.length} files`;
    return { task_id: parent.id, child_task_ids: parent.childTaskIds };
  });

  route(app, 'GET', '/v1/fetch_tasks_results/', 'fetch_tasks_results', (req) => {
    const c = new Checker({ query: req.query });
    const taskId = c.str('query', 'task_id', { required: true });
    c.done();
    const task = owned(world.tasks, taskId!, req.company, 'Task');
    if (task.childTaskIds && task.status === 'IN PROGRESS') {
      const children = task.childTaskIds.map((id) => world.tasks.get(id)!);
      if (children.every((t) => t.status !== 'IN PROGRESS')) {
        task.status = 'DONE';
        const failed = children.filter((t) => t.status === 'FAILED').length;
        task.statusMessage = `${children.length} files processed${failed ? `, ${failed} failed` : ''}`;
      }
    }
    return taskOut(ctx, task);
  });

  route(app, 'POST', '/v1/datatable_match_agents/:agent_id/upload_csv/', 'upload_csv', async (req) => {
    const c = new Checker({ path: req.params });
    const agentId = c.int('path', 'agent_id', { required: true });
    c.done();
    const agent = world.agents.get(agentId!);
    if (!agent || agent.companyId !== req.company.id) throw notFound('Agent', agentId);
    const { files } = await readMultipart(req);
    const file = files.get('file')?.[0];
    if (!file)
      throw new ValidationFailed([
        { type: 'missing', loc: ['body', 'file'], msg: 'Field required', input: null },
      ]);
    if (agent.type !== 'datatable_match')
      throw new HttpError(400, { detail: `Agent ${agent.id} is of type ${agent.type}, not datatable_match` });
    if (agent.templateIds.length !== 1) {
      throw new HttpError(400, {
        detail: `Agent ${agent.id} must be linked to exactly one template (it is linked to ${agent.templateIds.length})`,
      });
    }
    const table = looksLikeCsv(file);
    if (!table)
      throw new ValidationFailed([
        {
          type: 'value_error',
          loc: ['body', 'file'],
          msg: 'Value error, the file is not a CSV',
          input: file.fileName,
        },
      ]);
    // The agent's active flag is left as it is, and no document is flagged for rerun (the template's version stays).
    agent.datatable = table;
    return { agent_id: agent.id, rows: table.rows, columns: table.columns };
  });
}
