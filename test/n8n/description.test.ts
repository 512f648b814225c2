/**
 * The node descriptions as n8n reads them: every operation of the shared table is offered under its
 * resource, every parameter is shown for an operation that exists, and the lists users pick from
 * (resource locators, enums) are wired to something real.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { INodeProperties, INodePropertyOptions } from 'n8n-workflow';
import { credentialTestFailure, DocexApi } from '../../credentials/DocexApi.credentials.ts';
import { parameterName } from '../../nodes/Docex/actions/naming.ts';
import { allOperations } from '../../nodes/Docex/actions/router.ts';
import { Docex } from '../../nodes/Docex/Docex.node.ts';
import { DocexTrigger } from '../../nodes/DocexTrigger/DocexTrigger.node.ts';
import {
  type ParamSpec,
  FIELD_TYPES,
  LOCALES,
  OPERATION_NAMES,
  OPERATIONS,
  PARAMETER_FORMATS,
  RESOURCES,
} from '@docex/shared';

const node = new Docex();
const { properties } = node.description;
const values = (p: INodeProperties | undefined) =>
  ((p?.options ?? []) as INodePropertyOptions[]).map((o) => o.value);

/** Every property, nested collections included. */
function flatten(props: readonly INodeProperties[]): INodeProperties[] {
  return props.flatMap((p) => [
    p,
    ...(p.type === 'collection' ? flatten((p.options ?? []) as INodeProperties[]) : []),
  ]);
}

describe('Docex node description', () => {
  it('offers every resource of the table', () => {
    const resource = properties.find((p) => p.name === 'resource');
    expect(values(resource).sort()).toEqual(RESOURCES.map((r) => r.toLowerCase()).sort());
  });

  it('offers every operation of the table under its own resource, and Extract first under Document', () => {
    const offered = new Map<string, string[]>();
    for (const p of properties.filter((q) => q.name === 'operation'))
      offered.set(String(p.displayOptions!.show!.resource![0]), values(p).map(String));
    for (const name of OPERATION_NAMES) {
      const op = allOperations.find((o) => o.api.name === name && o.value !== 'extract')!;
      expect(offered.get(OPERATIONS[name].resource.toLowerCase()), name).toContain(op.value);
    }
    expect(offered.get('document')).toContain('extract');
    expect([...offered.values()].flat()).toHaveLength(OPERATION_NAMES.length + 1);
  });

  it('uses camelCase values and names, and a safe default: Document > Extract, never a change', () => {
    const camel = /^[a-z][a-zA-Z]*$/;
    for (const p of flatten(properties)) {
      expect(p.name, p.name).toMatch(camel);
      if (p.name === 'operation') for (const v of values(p)) expect(String(v)).toMatch(camel);
    }
    expect(properties.find((p) => p.name === 'resource')!.default).toBe('document');
    const defaults = properties.filter((p) => p.name === 'operation').map((p) => String(p.default));
    expect(
      defaults[
        properties
          .filter((p) => p.name === 'operation')
          .findIndex((p) => p.displayOptions!.show!.resource![0] === 'document')
      ],
    ).toBe('extract');
    for (const d of defaults) expect(d).not.toMatch(/^(delete|update|create|rerun|upload)$/);
  });

  it('gives every operation option an action sentence and a description', () => {
    for (const p of properties.filter((q) => q.name === 'operation'))
      for (const o of p.options as INodePropertyOptions[]) {
        expect(o.action, String(o.value)).toMatch(/^[A-Z][a-z]/);
        expect(o.description, String(o.value)).toBeTruthy();
      }
  });

  it('shows each parameter only for operations that exist', () => {
    const ops = new Set(allOperations.map((o) => o.value));
    for (const p of properties.filter((q) => q.name !== 'resource' && q.name !== 'operation'))
      for (const op of p.displayOptions?.show?.operation ?? [])
        expect(ops.has(String(op)), `${p.name}: ${String(op)}`).toBe(true);
  });

  it('shows every parameter of every operation, required ones at the top', () => {
    for (const op of allOperations) {
      const shown = properties.filter(
        (p) =>
          p.displayOptions?.show?.operation?.includes(op.value) &&
          p.displayOptions.show.resource?.includes(op.resource.toLowerCase()),
      );
      const names = new Set(flatten(shown).map((p) => p.name));
      for (const param of op.api.params as readonly ParamSpec[]) {
        const expected =
          param.kind === 'file' || param.kind === 'file[]' ? 'binaryPropertyName' : parameterName(param.name);
        expect(names.has(expected), `${op.value}.${param.name}`).toBe(true);
        if (param.required || op.required?.includes(param.name))
          expect(
            shown.find((p) => p.name === expected)?.required,
            `${op.value}.${param.name} at the top, required`,
          ).toBe(true);
      }
    }
  });

  it('has Return All / Limit on every Get Many, and Simplify wherever document data comes back', () => {
    const shownFor = (resource: string, operation: string) =>
      properties
        .filter(
          (p) =>
            p.displayOptions?.show?.resource?.includes(resource) &&
            p.displayOptions.show.operation?.includes(operation),
        )
        .map((p) => p.name);
    for (const resource of ['document', 'folder'])
      expect(shownFor(resource, 'getAll')).toEqual(expect.arrayContaining(['returnAll', 'limit']));
    for (const [resource, operation] of [
      ['document', 'extract'],
      ['document', 'getAll'],
      ['document', 'getData'],
      ['task', 'getResult'],
    ])
      expect(shownFor(resource!, operation!), `${resource} ${operation}`).toContain('simplify');
  });

  it('lets users pick folders and templates from a searchable list, or give an ID', () => {
    const locators = flatten(properties).filter((p) => p.type === 'resourceLocator');
    expect(new Set(locators.map((p) => p.name))).toEqual(new Set(['folderId', 'templateId']));
    for (const p of locators) {
      const list = p.modes!.find((m) => m.name === 'list')!;
      const method = list.typeOptions!.searchListMethod!;
      expect(typeof (node.methods.listSearch as Record<string, unknown>)[method], method).toBe('function');
      expect(p.modes!.map((m) => m.name)).toContain('id');
    }
  });

  it('declares no regex validation: n8n runs those at every execution and fails it when one takes 250 ms', () => {
    // n8n's safeRegex stops a parameter's regex after 250 ms and fails the execution with
    // "Regular expression execution timed out" on a busy machine; the node checks IDs itself.
    const rules = flatten(properties).flatMap((p) => [
      ...((p as { validation?: unknown[] }).validation ?? []),
      ...(p.modes ?? []).flatMap((m) => m.validation ?? []),
    ]);
    expect(rules.filter((r) => (r as { type?: string }).type === 'regex')).toEqual([]);
  });

  it('offers field format, type and locales as option lists', () => {
    const all = flatten(properties);
    const optionsOf = (name: string) => new Set(all.filter((p) => p.name === name).flatMap(values));
    expect(optionsOf('format')).toEqual(new Set(PARAMETER_FORMATS));
    expect(optionsOf('type')).toEqual(new Set(FIELD_TYPES));
    expect(optionsOf('numberLocale')).toEqual(new Set(LOCALES));
    expect(optionsOf('dateLocale')).toEqual(new Set(LOCALES));
  });

  it('is usable as a tool, with a hand-written tool description per operation an agent uses', () => {
    const tool = node.description.usableAsTool as { replacements: { properties: INodeProperties[] } };
    const toolProps = tool.replacements.properties;
    // The tool variant keeps every parameter of the node, after its own Description parameters.
    expect(toolProps.slice(-properties.length)).toEqual(properties);
    const descriptions = toolProps.filter((p) => p.name === 'toolDescription');
    const shownFor = (resource: string, operation: string) =>
      descriptions.filter((p) => {
        const { show = {}, hide = {} } = p.displayOptions ?? {};
        const matches = (rule: Record<string, unknown>, key: string, value: string) =>
          rule[key] === undefined ? undefined : (rule[key] as string[]).includes(value);
        if (matches(show, 'resource', resource) === false || matches(show, 'operation', operation) === false)
          return false;
        return !(matches(hide, 'resource', resource) || matches(hide, 'operation', operation));
      });
    // Exactly one Description for every operation, the agent's four hand-written.
    for (const op of allOperations) {
      expect(shownFor(op.resource.toLowerCase(), op.value), `${op.resource} ${op.value}`).toHaveLength(1);
    }
    expect(shownFor('document', 'extract')[0]!.default).toMatch(/Pass the link \(URL\) of the file/);
    expect(shownFor('document', 'getData')[0]!.default).toMatch(/by its document_id/);
    expect(shownFor('document', 'getAll')[0]!.default).toMatch(/^List the documents/);
    expect(shownFor('document', 'rerun')[0]!.default).toMatch(/^Extract one or more documents again/);
    expect(shownFor('folder', 'create')[0]!.default).toBe(node.description.description);
  });

  it('uses the docexApi credential, and bounds Items in Parallel', () => {
    expect(node.description.credentials).toEqual([{ name: 'docexApi', required: true }]);
    const parallel = flatten(properties).filter((p) => p.name === 'concurrency');
    expect(parallel.length).toBe(allOperations.length);
    for (const p of parallel) expect(p.typeOptions).toMatchObject({ minValue: 1, maxValue: 10 });
  });
});

describe('Docex Trigger and credential descriptions', () => {
  it('the trigger polls, filters by folder and template from lists, and has the same list methods', () => {
    const trigger = new DocexTrigger();
    expect(trigger.description.polling).toBe(true);
    expect(trigger.description.inputs).toEqual([]);
    const names = trigger.description.properties.map((p) => p.name);
    expect(names).toEqual(
      expect.arrayContaining(['event', 'folderId', 'templateId', 'idsOnly', 'simplify', 'startTime']),
    );
    // n8n's node creator lists a trigger's actions from its "Trigger On" options.
    const event = trigger.description.properties.find((p) => p.displayName === 'Trigger On')!;
    expect((event.options as INodePropertyOptions[]).map((o) => o.action)).toEqual([
      'On new document',
      'On new or changed document',
    ]);
    expect(trigger.methods.listSearch).toBe(node.methods.listSearch);
  });

  it('the credential sends the key as a Bearer header and is tested with check_api_key', () => {
    const credential = new DocexApi();
    expect(credential.name).toBe('docexApi');
    expect(credential.authenticate.properties.headers).toEqual({
      Authorization: '=Bearer {{$credentials.apiKey}}',
    });
    expect(credential.test.request).toMatchObject({ url: '/v1/check_api_key/', method: 'POST' });
    expect(credential.properties.find((p) => p.name === 'apiKey')!.typeOptions).toEqual({ password: true });
    // No placeholder host as a default: the Base URL must be given.
    expect(credential.properties.find((p) => p.name === 'baseUrl')).toMatchObject({
      default: '',
      required: true,
    });
    expect(credential.documentationUrl).toMatch(/^https:\/\/.+#credential$/);
    const rules = (credential.test.rules ?? []) as Array<{ properties: { value: number; message: string } }>;
    expect(rules.map((r) => r.properties.value)).toEqual([401, 403, 404]);
  });

  it("the credential test's failure carries the service's message, a hint, and never the key", () => {
    const credential = new DocexApi();
    // n8n runs preAuthentication only when the expirable property is empty, or after a 401.
    expect(credential.properties.find((p) => p.name === 'keyCheck')).toMatchObject({
      type: 'hidden',
      typeOptions: { expirable: true },
      default: expect.stringMatching(/./),
    });
    expect(credentialTestFailure(401, { detail: 'Invalid API key' }, 'secret-key')).toBe(
      'check_api_key: HTTP 401 Unauthorized: Invalid API key (check the API key, without "Bearer")',
    );
    expect(credentialTestFailure(403, { detail: 'Key secret-key is revoked' }, 'secret-key')).toBe(
      'check_api_key: HTTP 403 Forbidden: Key [redacted] is revoked (the key may be revoked or lack access)',
    );
    expect(credentialTestFailure(500, 'boom', 'secret-key')).toBe(
      'check_api_key: HTTP 500 Internal Server Error: boom',
    );
  });

  it('both nodes have documentation, their own node-creator description, and codex files with aliases', () => {
    const action = new Docex().description;
    const trigger = new DocexTrigger().description;
    for (const d of [action, trigger]) expect(d.documentationUrl).toMatch(/^https:\/\//);
    expect(action.description).not.toBe(trigger.description);
    for (const [file, d] of [
      ['../../nodes/Docex/Docex.node.json', action],
      ['../../nodes/DocexTrigger/DocexTrigger.node.json', trigger],
    ] as const) {
      const codex = JSON.parse(readFileSync(join(import.meta.dirname, file), 'utf8')) as {
        node: string;
        categories: string[];
        alias: string[];
        resources: { primaryDocumentation: Array<{ url: string }> };
      };
      expect(codex.node).toBe(`n8n-nodes-docex.${d.name}`);
      expect(codex.categories.length).toBeGreaterThan(0);
      expect(codex.alias).toEqual(expect.arrayContaining(['invoice', 'receipt', 'OCR', 'PDF']));
      expect(codex.resources.primaryDocumentation[0]!.url).toMatch(/^https:\/\//);
    }
  });
});

describe('examples/n8n-*.json', () => {
  const examples = readdirSync(join(import.meta.dirname, '../../examples'))
    .filter((f) => /^n8n-.*\.json$/.test(f))
    .map((f) => ({
      file: f,
      workflow: JSON.parse(readFileSync(join(import.meta.dirname, '../../examples', f), 'utf8')) as {
        nodes: Array<{ type: string; parameters: Record<string, unknown> }>;
        settings?: { executionOrder?: string };
      },
    }));

  it('exist for the action node and the trigger', () => {
    const types = new Set(examples.flatMap((e) => e.workflow.nodes.map((n) => n.type)));
    expect(types).toContain('n8n-nodes-docex.docex');
    expect(types).toContain('n8n-nodes-docex.docexTrigger');
  });

  it("run in n8n's current execution order, which an agent's tools need", () => {
    // Imported without it (the CLI keeps a file's settings) a workflow runs in the legacy order
    // "v0", in which an AI Agent is handed '""' for its tool's answer (docs/n8n.md).
    for (const { file, workflow } of examples)
      expect(workflow.settings, file).toEqual({ executionOrder: 'v1' });
  });

  it('use only parameters the nodes show (for the chosen operation)', () => {
    const triggerProps = new DocexTrigger().description.properties.map((p) => p.name);
    for (const { file, workflow } of examples) {
      for (const { type, parameters } of workflow.nodes) {
        if (type === 'n8n-nodes-docex.docexTrigger') {
          for (const name of Object.keys(parameters))
            if (name !== 'pollTimes') expect(triggerProps, `${file}: ${name}`).toContain(name);
        }
        if (type !== 'n8n-nodes-docex.docex') continue;
        const { resource, operation, ...rest } = parameters;
        const shown = properties.filter(
          (p) =>
            p.displayOptions?.show?.resource?.includes(resource as string) &&
            p.displayOptions.show.operation?.includes(operation as string),
        );
        for (const [name, value] of Object.entries(rest)) {
          const property = shown.find((p) => p.name === name);
          expect(property, `${file} ${String(operation)}: ${name}`).toBeDefined();
          if (property!.type === 'collection')
            for (const key of Object.keys(value as object))
              expect(
                (property!.options as INodeProperties[]).map((o) => o.name),
                `${file} ${String(operation)}: ${name}.${key}`,
              ).toContain(key);
        }
      }
    }
  });
});
