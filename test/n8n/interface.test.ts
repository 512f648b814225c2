/**
 * The frozen interface of both nodes. Workflows save parameter names, types, option values and
 * defaults; they must keep working when the package is updated. Two snapshots per node:
 *
 * - `<node>.v<latest version>.interface.json`: what a saved workflow depends on (names, types,
 *   defaults, option values, where each parameter shows). A change here needs a new `version`
 *   entry (the node class) and code that still reads the old parameters; the snapshot of
 *   the old version then stays as it was, and a new one is written for the new version.
 * - `<node>.description.json`: the whole generated description, so that a change to the operation
 *   table shows up in review as the builder will see it.
 *
 * Update after a deliberate change with `vitest run test/n8n/interface.test.ts -u`.
 */
import { describe, expect, it } from 'vitest';
import type {
  INodeProperties,
  INodePropertyCollection,
  INodePropertyOptions,
  INodeTypeDescription,
} from 'n8n-workflow';
import { Docex } from '../../nodes/Docex/Docex.node.ts';
import { DocexTrigger } from '../../nodes/DocexTrigger/DocexTrigger.node.ts';

type Option = INodePropertyOptions | INodeProperties | INodePropertyCollection;

/** What a saved workflow depends on, for one parameter (nested collections included). */
function savedShape(p: INodeProperties): object {
  const options = (p.options ?? []) as Option[];
  return {
    name: p.name,
    type: p.type,
    default: p.default,
    ...(p.required ? { required: true } : {}),
    ...(p.displayOptions ? { displayOptions: p.displayOptions } : {}),
    ...(p.type === 'options' || p.type === 'multiOptions'
      ? { values: options.map((o) => (o as INodePropertyOptions).value) }
      : {}),
    ...(p.type === 'collection' ? { fields: (options as INodeProperties[]).map(savedShape) } : {}),
    ...(p.type === 'resourceLocator' ? { modes: (p.modes ?? []).map((m) => m.name) } : {}),
  };
}

const latest = (d: INodeTypeDescription) => (Array.isArray(d.version) ? Math.max(...d.version) : d.version);

describe.each([
  ['docex', new Docex().description],
  ['docexTrigger', new DocexTrigger().description],
])('%s', (name, description) => {
  it('keeps the interface saved workflows use, for its latest version', async () => {
    const shape = { version: description.version, parameters: description.properties.map(savedShape) };
    await expect(`${JSON.stringify(shape, null, 1)}\n`).toMatchFileSnapshot(
      `__snapshots__/${name}.v${latest(description)}.interface.json`,
    );
  });

  it('has the generated description under review', async () => {
    await expect(`${JSON.stringify(description, null, 1)}\n`).toMatchFileSnapshot(
      `__snapshots__/${name}.description.json`,
    );
  });
});
