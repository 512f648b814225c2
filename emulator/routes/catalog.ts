/** Folders, templates, fields and instructions. */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { HttpError, owned, route, type Ctx } from '../routing.ts';
import type { Company, Field, Folder, Instruction, Template, World } from '../state.ts';
import { Checker } from '../validation.ts';

// The API document's enums, typed here from the document and not taken from the client's table: a
// mistake in the table must meet an emulator that disagrees (test/emulator/enums.test.ts compares both).
export const FIELD_TYPES = ['General fields', 'Line fields'] as const;
export const LOCALES = ['EU', 'US'] as const;
export const PARAMETER_FORMATS = [
  'text',
  'number',
  'date',
  'invoice_date',
  'invoice_number',
  'code',
  'label',
  'unit_price',
  'total_price',
  'quantity',
  'quantity_unit',
  'empty',
  'default',
  'multiple_choice',
  'boolean',
  'unit',
  'invoice_amount',
  'document_name',
  'fraud_verdict',
] as const;

const check = (request: FastifyRequest) =>
  new Checker({ query: request.query, body: request.body, path: request.params });

export function folderOut(world: World, f: Folder) {
  const templates = world.templatesOf(f.id);
  return {
    id: f.id,
    name: f.name,
    desc: f.desc,
    template_ids: templates.map((t) => t.id),
    templates: templates.map((t) => ({ id: t.id, name: t.name, desc: t.desc })),
  };
}

export function templateOut(world: World, t: Template) {
  return {
    id: t.id,
    name: t.name,
    desc: t.desc,
    folder_id: t.folderId,
    field_ids: world.fieldsOf(t.id).map((f) => f.id),
    instruction_ids: world.instructionsOf(t.id).map((i) => i.id),
    number_locale: t.numberLocale,
    date_locale: t.dateLocale,
    agent_ids: [...world.agents.values()].filter((a) => a.templateIds.includes(t.id)).map((a) => a.id),
  };
}

const fieldOut = (f: Field) => ({
  id: f.id,
  template_id: f.templateId,
  name: f.name,
  type: f.type,
  desc: f.desc,
  format: f.format,
  position: f.position,
});
const instructionOut = (i: Instruction) => ({
  id: i.id,
  template_id: i.templateId,
  content: i.content,
  type: i.type,
});

/** Deletes a template with its fields, instructions and (when asked) documents; 409 when documents remain. */
export function deleteTemplate(world: World, t: Template, override: boolean) {
  const docs = [...world.documents.values()].filter((d) => d.templateId === t.id);
  if (docs.length > 0 && !override) {
    throw new HttpError(409, {
      detail: `Template ${t.id} still has ${docs.length} document(s); use override=true to delete them too`,
    });
  }
  for (const d of docs) world.documents.delete(d.id);
  for (const f of world.fieldsOf(t.id)) world.fields.delete(f.id);
  for (const i of world.instructionsOf(t.id)) world.instructions.delete(i.id);
  for (const a of world.agents.values()) a.templateIds = a.templateIds.filter((id) => id !== t.id);
  world.templates.delete(t.id);
}

function uniqueName(world: World, company: Company, name: string, except?: number) {
  for (const t of world.templates.values()) {
    if (t.companyId === company.id && t.name === name && t.id !== except)
      throw new HttpError(409, { detail: `Template name "${name}" already exists` });
  }
}

export function registerCatalog(app: FastifyInstance, ctx: Ctx) {
  const { world } = ctx;

  route(app, 'GET', '/v1/fetch_all_folders/', 'fetch_all_folders', (req) => ({
    folders: [...world.folders.values()]
      .filter((f) => f.companyId === req.company.id)
      .map((f) => folderOut(world, f)),
  }));

  route(app, 'GET', '/v1/fetch_folder/', 'fetch_folder', (req) => {
    const c = check(req);
    const id = c.int('query', 'folder_id', { required: true });
    c.done();
    return folderOut(world, owned(world.folders, id!, req.company, 'Folder'));
  });

  route(app, 'POST', '/v1/create_folder/', 'create_folder', (req) => {
    const c = check(req).bodyObject(req.body ?? {});
    const name = c.str('body', 'name', { nullable: true }) ?? null;
    const desc = c.str('body', 'desc', { nullable: true }) ?? null;
    c.done();
    const folder: Folder = { id: world.nextId('folder'), companyId: req.company.id, name, desc };
    world.folders.set(folder.id, folder);
    return folderOut(world, folder);
  });

  route(app, 'PUT', '/v1/update_folder/', 'update_folder', (req) => {
    const c = check(req).bodyObject(req.body ?? {});
    const id = c.int('query', 'folder_id', { required: true });
    const name = c.str('body', 'name', { nullable: true });
    const desc = c.str('body', 'desc', { nullable: true });
    c.done();
    const folder = owned(world.folders, id!, req.company, 'Folder');
    if (name !== undefined) folder.name = name;
    if (desc !== undefined) folder.desc = desc;
    return folderOut(world, folder);
  });

  route(app, 'DELETE', '/v1/delete_folder/', 'delete_folder', (req) => {
    const c = check(req);
    const id = c.int('query', 'folder_id', { required: true });
    const override = c.bool('query', 'override', false);
    c.done();
    const folder = owned(world.folders, id!, req.company, 'Folder');
    const templates = world.templatesOf(folder.id);
    if (templates.length > 0 && !override) {
      throw new HttpError(409, {
        detail: `Folder ${folder.id} still holds ${templates.length} template(s); use override=true to delete them too`,
      });
    }
    for (const t of templates) deleteTemplate(world, t, true);
    world.folders.delete(folder.id);
    return { deleted: true, folder_id: folder.id };
  });

  route(app, 'GET', '/v1/fetch_template/', 'fetch_template', (req) => {
    const c = check(req);
    const id = c.int('query', 'template_id', { required: true });
    c.done();
    return templateOut(world, owned(world.templates, id!, req.company, 'Template'));
  });

  route(app, 'POST', '/v1/create_template/', 'create_template', (req) => {
    const c = check(req).bodyObject(req.body);
    // The document puts folder_id in the body and, in its prose, in the query: both are accepted, the body wins.
    const bodyFolder = c.int('body', 'folder_id', { nullable: true });
    const queryFolder = c.int('query', 'folder_id');
    const name = c.str('body', 'name', { required: true });
    const desc = c.str('body', 'desc', { nullable: true }) ?? null;
    const numberLocale = c.str('body', 'number_locale', { nullable: true, values: LOCALES }) ?? null;
    const dateLocale = c.str('body', 'date_locale', { nullable: true, values: LOCALES }) ?? null;
    const sourceId = c.int('query', 'template_id');
    const withAgents = c.bool('query', 'with_agents', false);
    const folderId = bodyFolder ?? queryFolder;
    if (folderId === undefined || folderId === null) {
      c.detail.push({
        type: 'missing',
        loc: ['body', 'folder_id'],
        msg: 'Field required',
        input: req.body ?? null,
      });
    }
    c.done();
    const folder = owned(world.folders, folderId!, req.company, 'Folder');
    const source =
      sourceId !== undefined && sourceId !== null
        ? owned(world.templates, sourceId, req.company, 'Template')
        : undefined;
    uniqueName(world, req.company, name!);
    const template: Template = {
      id: world.nextId('template'),
      companyId: req.company.id,
      folderId: folder.id,
      name: name!,
      desc,
      numberLocale: numberLocale as Template['numberLocale'],
      dateLocale: dateLocale as Template['dateLocale'],
      version: 1,
      createdAt: ctx.now(),
    };
    world.templates.set(template.id, template);
    if (source) {
      for (const f of world.fieldsOf(source.id)) {
        const copy = { ...f, id: world.nextId('field'), templateId: template.id };
        world.fields.set(copy.id, copy);
      }
      for (const i of world.instructionsOf(source.id)) {
        const copy = { ...i, id: world.nextId('instruction'), templateId: template.id };
        world.instructions.set(copy.id, copy);
      }
    }
    if (withAgents) {
      const agent = {
        id: world.nextId('agent'),
        companyId: req.company.id,
        type: 'datatable_match',
        templateIds: [template.id],
        active: true,
        datatable: null,
      };
      world.agents.set(agent.id, agent);
    }
    return templateOut(world, template);
  });

  route(app, 'PUT', '/v1/update_template/', 'update_template', (req) => {
    const c = check(req).bodyObject(req.body ?? {});
    const id = c.int('query', 'template_id', { required: true });
    const folderId = c.int('body', 'folder_id', { nullable: true });
    const name = c.str('body', 'name', { nullable: true });
    const desc = c.str('body', 'desc', { nullable: true });
    const numberLocale = c.str('body', 'number_locale', { nullable: true, values: LOCALES });
    const dateLocale = c.str('body', 'date_locale', { nullable: true, values: LOCALES });
    c.done();
    const t = owned(world.templates, id!, req.company, 'Template');
    if (folderId !== undefined && folderId !== null)
      t.folderId = owned(world.folders, folderId, req.company, 'Folder').id;
    if (name !== undefined && name !== null) {
      uniqueName(world, req.company, name, t.id);
      t.name = name;
    }
    if (desc !== undefined) t.desc = desc;
    if (numberLocale !== undefined) t.numberLocale = numberLocale as Template['numberLocale'];
    if (dateLocale !== undefined) t.dateLocale = dateLocale as Template['dateLocale'];
    world.bumpVersion(t.id);
    return templateOut(world, t);
  });

  route(app, 'DELETE', '/v1/delete_template/', 'delete_template', (req, reply) => {
    const c = check(req);
    const id = c.int('query', 'template_id', { required: true });
    const override = c.bool('query', 'override', false);
    c.done();
    deleteTemplate(world, owned(world.templates, id!, req.company, 'Template'), override);
    return reply.status(200).send();
  });

  route(app, 'GET', '/v1/fetch_field/', 'fetch_field', (req) => {
    const c = check(req);
    const id = c.int('query', 'field_id', { required: true });
    c.done();
    return fieldOut(owned(world.fields, id!, req.company, 'Field'));
  });

  route(app, 'POST', '/v1/create_field/', 'create_field', (req) => {
    const c = check(req).bodyObject(req.body);
    const name = c.str('body', 'name', { required: true });
    const bodyTemplate = c.int('body', 'template_id', { nullable: true });
    const queryTemplate = c.int('query', 'template_id');
    const type = c.str('body', 'type', { required: true, values: FIELD_TYPES });
    const format = c.str('body', 'format', { required: true, values: PARAMETER_FORMATS });
    const desc = c.str('body', 'desc', { nullable: true }) ?? null;
    const position = c.int('body', 'position', { nullable: true }) ?? null;
    const templateId = bodyTemplate ?? queryTemplate;
    if (templateId === undefined || templateId === null) {
      c.detail.push({
        type: 'missing',
        loc: ['body', 'template_id'],
        msg: 'Field required',
        input: req.body ?? null,
      });
    }
    c.done();
    const t = owned(world.templates, templateId!, req.company, 'Template');
    const field: Field = {
      id: world.nextId('field'),
      companyId: req.company.id,
      templateId: t.id,
      name: name!,
      type: type as Field['type'],
      format: format!,
      desc,
      position,
    };
    world.fields.set(field.id, field);
    world.bumpVersion(t.id);
    return fieldOut(field);
  });

  route(app, 'PUT', '/v1/update_field/', 'update_field', (req) => {
    const c = check(req).bodyObject(req.body ?? {});
    const id = c.int('query', 'field_id', { required: true });
    const name = c.str('body', 'name', { nullable: true });
    const type = c.str('body', 'type', { nullable: true, values: FIELD_TYPES });
    const desc = c.str('body', 'desc', { nullable: true });
    const format = c.str('body', 'format', { nullable: true, values: PARAMETER_FORMATS });
    const position = c.int('body', 'position', { nullable: true });
    c.done();
    const f = owned(world.fields, id!, req.company, 'Field');
    // null leaves name, type and format as they are (they cannot be empty); it clears desc and position.
    if (name) f.name = name;
    if (type) f.type = type as Field['type'];
    if (format) f.format = format;
    if (desc !== undefined) f.desc = desc;
    if (position !== undefined) f.position = position;
    world.bumpVersion(f.templateId);
    return fieldOut(f);
  });

  route(app, 'DELETE', '/v1/delete_field/', 'delete_field', (req, reply) => {
    const c = check(req);
    const id = c.int('query', 'field_id', { required: true });
    c.done();
    const f = owned(world.fields, id!, req.company, 'Field');
    world.fields.delete(f.id);
    world.bumpVersion(f.templateId);
    return reply.status(200).send();
  });

  const instructionId = (req: FastifyRequest, c: Checker) => {
    const fromPath = (req.params as { instruction_id?: string }).instruction_id;
    return fromPath !== undefined
      ? c.int('path', 'instruction_id', { required: true })
      : c.int('query', 'instruction_id', { required: true });
  };
  const fetchInstruction = (req: FastifyRequest) => {
    const c = check(req);
    const id = instructionId(req, c);
    c.done();
    return instructionOut(owned(world.instructions, id!, req.company, 'Instruction'));
  };
  const updateInstruction = (req: FastifyRequest) => {
    const c = check(req).bodyObject(req.body ?? {});
    const id = instructionId(req, c);
    const content = c.str('body', 'content', { nullable: true });
    const type = c.str('body', 'type', { nullable: true, values: FIELD_TYPES });
    c.done();
    const i = owned(world.instructions, id!, req.company, 'Instruction');
    if (content) i.content = content;
    if (type) i.type = type as Instruction['type'];
    world.bumpVersion(i.templateId);
    return instructionOut(i);
  };
  const deleteInstruction = (req: FastifyRequest) => {
    const c = check(req);
    const id = instructionId(req, c);
    c.done();
    const i = owned(world.instructions, id!, req.company, 'Instruction');
    world.instructions.delete(i.id);
    world.bumpVersion(i.templateId);
  };
  for (const suffix of ['', ':instruction_id']) {
    route(app, 'GET', `/v1/fetch_instruction/${suffix}`, 'fetch_instruction', fetchInstruction);
    route(app, 'PUT', `/v1/update_instruction/${suffix}`, 'update_instruction', updateInstruction);
    route(app, 'DELETE', `/v1/delete_instruction/${suffix}`, 'delete_instruction', async (req, reply) => {
      deleteInstruction(req);
      return reply.status(200).send();
    });
  }

  route(app, 'POST', '/v1/create_instruction/', 'create_instruction', (req) => {
    const c = check(req).bodyObject(req.body);
    const content = c.str('body', 'content', { required: true });
    const type = c.str('body', 'type', { required: true, values: FIELD_TYPES });
    const templateId = c.int('body', 'template_id', { required: true });
    c.done();
    const t = owned(world.templates, templateId!, req.company, 'Template');
    const i: Instruction = {
      id: world.nextId('instruction'),
      companyId: req.company.id,
      templateId: t.id,
      content: content!,
      type: type as Instruction['type'],
    };
    world.instructions.set(i.id, i);
    world.bumpVersion(t.id);
    return instructionOut(i);
  });
}
