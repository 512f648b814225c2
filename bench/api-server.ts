/**
 * A fast stand-in for the service, for the ingest benchmark (a child process; sends its port over
 * IPC): upload_file answers a task id (several files: a parent task and one child per file, as
 * the API document has it), fetch_tasks_results says DONE at once with the file's name,
 * fetch_document_data answers a small document. Nothing else; only the engine around the requests
 * is measured.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

let next = 0;
/** Each task's file name: how a client tells which child is which file of a batch. */
const names = new Map<string, string>();
const children = new Map<string, string[]>();
const json = (res: import('node:http').ServerResponse, body: unknown) => {
  res.setHeader('content-type', 'application/json');
  res.end(JSON.stringify(body));
};

const server = createServer((req, res) => {
  const url = new URL(req.url!, 'http://x');
  const path = url.pathname.replace(/\/$/, '');
  const upload = path.endsWith('/upload_file');
  const chunks: Buffer[] = [];
  if (upload) req.on('data', (chunk: Buffer) => chunks.push(chunk));
  else req.resume();
  req.on('end', () => {
    if (upload) {
      const files = [
        ...Buffer.concat(chunks)
          .toString('latin1')
          .matchAll(/filename="([^"]*)"/g),
      ].map((m) => m[1]!);
      const tasks = files.map((name) => {
        const id = `task-${++next}`;
        names.set(id, name);
        return id;
      });
      if (tasks.length === 1) return json(res, { task_id: tasks[0] });
      const parent = `batch-${++next}`;
      children.set(parent, tasks);
      return json(res, { task_id: parent, child_task_ids: tasks });
    }
    if (path.endsWith('/check_api_key')) return json(res, { ok: true });
    if (path.endsWith('/fetch_tasks_results')) {
      const taskId = url.searchParams.get('task_id')!;
      const childTaskIds = children.get(taskId);
      if (childTaskIds)
        return json(res, {
          status: 'DONE',
          status_message: '',
          task_id: taskId,
          child_task_ids: childTaskIds,
        });
      return json(res, {
        status: 'DONE',
        status_message: '',
        task_id: taskId,
        document_id: Number(taskId.slice(5)),
        document_name: names.get(taskId) ?? null,
      });
    }
    if (path.endsWith('/fetch_document_data')) {
      const id = Number(url.searchParams.get('document_id'));
      return json(res, {
        document_id: id,
        template_id: 1,
        document_name: `doc-${id}.txt`,
        task_id: `task-${id}`,
        General_fields: {
          'Invoice number': { value: `INV-${id}`, confidence: 0.95 },
          Total: { value: 10.5, confidence: 0.9 },
        },
        General_fields_list: [],
        Line_fields: { Description: { values: ['Widget', 'Gadget'], confidences: [0.9, 0.9] } },
      });
    }
    if (path.endsWith('/fetch_template'))
      return json(res, {
        id: 1,
        name: 'Invoice',
        desc: null,
        folder_id: 1,
        field_ids: [1, 2, 3],
        number_locale: 'EU',
      });
    if (path.endsWith('/fetch_field')) {
      const id = Number(url.searchParams.get('field_id'));
      const [name, type] = [
        ['Invoice number', 'General fields'],
        ['Total', 'General fields'],
        ['Description', 'Line fields'],
      ][id - 1]!;
      return json(res, { id, template_id: 1, name, type, desc: null, format: 'text', position: id });
    }
    res.statusCode = 404;
    res.end();
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => process.send!((server.address() as AddressInfo).port));
process.on('disconnect', () => process.exit(0));
