/**
 * The node descriptions as n8n reads them: every operation of the shared table is offered under its
 * resource, every parameter is shown for an operation that exists, and the lists users pick from
 * (resource locators, enums) are wired to something real.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { INodeProperties, INodePropertyOptions } from 'n8n-workflow';
import { DocexApi } from '../../credentials/DocexApi.credentials.ts';
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
} from '../../shared/src/core/index.ts';

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

  it('offers every operation of the table under its own resource, and Upload and Wait under Task', () => {
    const offered = new Map<string, string>();
    for (const p of properties.filter((q) => q.name === 'operation'))
      for (const op of values(p)) offered.set(String(op), String(p.displayOptions!.show!.resource![0]));
    for (const name of OPERATION_NAMES)
      expect(offered.get(name), name).toBe(OPERATIONS[name].resource.toLowerCase());
    expect(offered.get('upload_and_wait')).toBe('task');
    expect(offered.size).toBe(OPERATION_NAMES.length + 1);
  });

  it('gives every operation option an action sentence and a description', () => {
    for (const p of properties.filter((q) => q.name === 'operation'))
      for (const o of p.options as INodePropertyOptions[]) {
        expect(o.action, String(o.value)).toMatch(/^[A-Z][a-z]/);
        expect(o.description, String(o.value)).toBeTruthy();
      }
  });

  it('shows each parameter only for operations that exist', () => {
    const ops = new Set([...OPERATION_NAMES, 'upload_and_wait']);
    for (const p of properties.filter((q) => q.name !== 'resource' && q.name !== 'operation'))
      for (const op of p.displayOptions?.show?.operation ?? [])
        expect(ops.has(String(op)), `${p.name}: ${String(op)}`).toBe(true);
  });

  it('shows every parameter of every operation, required ones at the top', () => {
    for (const name of OPERATION_NAMES) {
      const shown = properties.filter((p) => p.displayOptions?.show?.operation?.includes(name));
      const names = new Set(flatten(shown).map((p) => p.name));
      for (const param of OPERATIONS[name].params as readonly ParamSpec[]) {
        const expected = param.kind === 'file' || param.kind === 'file[]' ? 'binaryPropertyName' : param.name;
        expect(names.has(expected), `${name}.${param.name}`).toBe(true);
        if (param.required)
          expect(
            shown.some((p) => p.name === expected),
            `${name}.${param.name} at the top`,
          ).toBe(true);
      }
    }
  });

  it('lets users pick folders and templates from a searchable list, or give an ID', () => {
    const locators = flatten(properties).filter((p) => p.type === 'resourceLocator');
    expect(new Set(locators.map((p) => p.name))).toEqual(new Set(['folder_id', 'template_id']));
    for (const p of locators) {
      const list = p.modes!.find((m) => m.name === 'list')!;
      const method = list.typeOptions!.searchListMethod!;
      expect(typeof (node.methods.listSearch as Record<string, unknown>)[method], method).toBe('function');
      expect(p.modes!.map((m) => m.name)).toContain('id');
    }
  });

  it('offers field format, type and locales as option lists', () => {
    const all = flatten(properties);
    const optionsOf = (name: string) => new Set(all.filter((p) => p.name === name).flatMap(values));
    expect(optionsOf('format')).toEqual(new Set(PARAMETER_FORMATS));
    expect(optionsOf('type')).toEqual(new Set(FIELD_TYPES));
    expect(optionsOf('number_locale')).toEqual(new Set(LOCALES));
    expect(optionsOf('date_locale')).toEqual(new Set(LOCALES));
  });

  it('is usable as a tool, uses the docexApi credential, and bounds Items in Parallel', () => {
    expect(node.description.usableAsTool).toBe(true);
    expect(node.description.credentials).toEqual([{ name: 'docexApi', required: true }]);
    const parallel = flatten(properties).filter((p) => p.name === 'concurrency');
    expect(parallel.length).toBe(OPERATION_NAMES.length + 1);
    for (const p of parallel) expect(p.typeOptions).toMatchObject({ minValue: 1, maxValue: 10 });
  });
});

describe('Docex Trigger and credential descriptions', () => {
  it('the trigger polls, filters by folder and template from lists, and has the same list methods', () => {
    const trigger = new DocexTrigger();
    expect(trigger.description.polling).toBe(true);
    expect(trigger.description.inputs).toEqual([]);
    const names = trigger.description.properties.map((p) => p.name);
    expect(names).toEqual(expect.arrayContaining(['folder_id', 'template_id', 'idsOnly', 'startTime']));
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
  });
});

describe('examples/n8n-workflow.json', () => {
  it('uses only parameters the node shows for the chosen operation', () => {
    const example = JSON.parse(
      readFileSync(join(import.meta.dirname, '../../examples/n8n-workflow.json'), 'utf8'),
    ) as { nodes: Array<{ type: string; parameters: Record<string, unknown> }> };
    const docexNodes = example.nodes.filter((n) => n.type === 'n8n-nodes-docex.docex');
    expect(docexNodes.length).toBeGreaterThan(0);
    for (const { parameters } of docexNodes) {
      const { resource, operation, ...rest } = parameters;
      const shown = properties.filter(
        (p) =>
          p.displayOptions?.show?.resource?.includes(resource as string) &&
          p.displayOptions.show.operation?.includes(operation as string),
      );
      for (const [name, value] of Object.entries(rest)) {
        const property = shown.find((p) => p.name === name);
        expect(property, `${String(operation)}: ${name}`).toBeDefined();
        if (property!.type === 'collection')
          for (const key of Object.keys(value as object))
            expect(
              (property!.options as INodeProperties[]).map((o) => o.name),
              `${String(operation)}: ${name}.${key}`,
            ).toContain(key);
      }
    }
  });
});
