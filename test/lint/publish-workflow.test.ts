/**
 * The publishing workflow (.github/workflows/publish.yml): a version tag publishes every npm package
 * of the repo with a provenance statement, from a job that may mint an OIDC token and only read the
 * repository, after the lint n8n's verification asks for. Parsed, not grepped.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';

const repo = join(import.meta.dirname, '../..');

interface Step {
  name?: string;
  uses?: string;
  run?: string;
  with?: Record<string, string>;
  env?: Record<string, string>;
  'working-directory'?: string;
}
interface Workflow {
  on: { push?: { tags?: string[]; branches?: string[] } };
  permissions?: Record<string, string>;
  jobs: Record<
    string,
    {
      permissions?: Record<string, string>;
      strategy?: { matrix?: { package?: Array<{ name: string; dir: string }> } };
      steps: Step[];
    }
  >;
}

const workflow = parse(readFileSync(join(repo, '.github/workflows/publish.yml'), 'utf8')) as Workflow;
const [jobName, job] = Object.entries(workflow.jobs)[0]!;
const packages = job.strategy?.matrix?.package ?? [];
const readManifest = (dir: string) =>
  JSON.parse(readFileSync(join(repo, dir, 'package.json'), 'utf8')) as {
    name: string;
    private?: boolean;
    workspaces?: string[];
    scripts?: Record<string, string>;
  };

describe('the publishing workflow', () => {
  it('runs on a version tag only', () => {
    expect(Object.keys(workflow.on)).toEqual(['push']);
    expect(workflow.on.push?.branches).toBeUndefined();
    expect(workflow.on.push?.tags).toEqual(['v*.*.*']);
  });

  it('is one job that may mint an OIDC token and only read the repository', () => {
    expect(Object.keys(workflow.jobs)).toEqual([jobName]);
    expect(workflow.permissions ?? {}).toEqual({});
    expect(job.permissions).toEqual({ 'id-token': 'write', contents: 'read' });
  });

  it('publishes every npm package of the repo, one matrix line each, from its own folder', () => {
    const root = readManifest('.');
    const publishable = ['.', ...(root.workspaces ?? [])].filter((dir) => !readManifest(dir).private);
    expect(packages.map((p) => p.dir).sort()).toEqual(publishable.sort());
    for (const { name, dir } of packages) {
      expect(readManifest(dir).name).toBe(name);
      // Built by its own prepack, as a local npm pack builds it.
      expect(readManifest(dir).scripts?.prepack).toBeTruthy();
    }
    expect(packages.map((p) => p.name)).toEqual(expect.arrayContaining(['n8n-nodes-docex', 'docex-sync']));
  });

  it('checks out, installs the repo way, lints, then publishes with --provenance', () => {
    const index = (match: (s: Step) => boolean) => job.steps.findIndex(match);
    const checkout = index((s) => s.uses?.startsWith('actions/checkout@') ?? false);
    const setupNode = job.steps.find((s) => s.uses?.startsWith('actions/setup-node@'));
    const install = index((s) => s.run?.trim() === 'bash scripts/run.sh true');
    const lint = index((s) => s.run?.trim() === 'npm run lint');
    const publish = index((s) => /\bnpm publish\b/.test(s.run ?? ''));
    expect(checkout).toBe(0);
    expect(setupNode?.with?.['registry-url']).toBe('https://registry.npmjs.org');
    expect(setupNode?.with?.['node-version-file']).toBe('.nvmrc');
    expect([checkout, install, lint, publish].every((i) => i >= 0)).toBe(true);
    expect(install).toBeLessThan(lint);
    expect(lint).toBeLessThan(publish);
    const step = job.steps[publish]!;
    expect(step.run).toMatch(/npm publish --provenance --access public/);
    expect(step['working-directory']).toBe('${{ matrix.package.dir }}');
    expect(step.env?.PACKAGE).toBe('${{ matrix.package.name }}');
    expect(step.env?.NODE_AUTH_TOKEN).toBe('${{ secrets.NPM_TOKEN }}');
  });
});
