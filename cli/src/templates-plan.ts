/** `docex templates plan`: what `apply` would create, change and delete. */
import { isOn, type Options } from '@docex/cli-kit/args';
import type { Command, Io } from '@docex/cli-kit/command';
import { UsageError } from '@docex/cli-kit/errors';
import { EXIT } from '@docex/cli-kit/exit-codes';

export const PRUNE_FLAG = {
  name: 'prune',
  help: "delete what the file does not list (in the file's folders)",
};

/** The setup file read and checked, the account read, and the plan between them (plan and apply). */
export async function planFor(options: Options, io: Io, where: string) {
  const [file, ...extra] = options.args;
  if (!file || extra.length) throw new UsageError(`give one setup file (see ${where} --help)`);
  const [{ contextFor }, { readYamlFile }, model, { plan }, { readAccount }] = await Promise.all([
    import('./context.ts'),
    import('@docex/cli-kit/yaml'),
    import('./setup/model.ts'),
    import('./setup/plan.ts'),
    import('./setup/remote.ts'),
  ]);
  const located = readYamlFile(file, model.SetupSchema);
  model.checkSetup(located);
  const desired = located.data;
  const ctx = contextFor(io, options);
  const client = ctx.client();
  const account = await readAccount(client, {
    folders: new Set(desired.folders.map((f) => f.name)),
    templates: new Set(desired.templates.map((t) => t.name)),
  });
  return { ctx, client, account, planned: plan(desired, account) };
}

export const command: Command = {
  name: 'templates plan',
  usage: 'docex templates plan FILE [--prune]',
  description: `Shows what "apply" would create (+), change (~) and delete (-). Deletes (templates of the file's
folders, fields and instructions the file does not list) need --prune; without it, a plan that
would delete something exits 1.`,
  flags: [PRUNE_FLAG],
  maxArgs: 1,
  async run(options, io) {
    const { ctx, planned } = await planFor(options, io, 'docex templates plan');
    const [{ checkPrune, formatPlan }, { json }] = await Promise.all([
      import('./setup/plan.ts'),
      import('./output.ts'),
    ]);
    const prune = isOn(options, 'prune');
    ctx.out(ctx.json ? json(planned) : formatPlan(planned, prune));
    checkPrune(planned, prune);
    return EXIT.ok;
  },
};
