/** `docex templates apply`: makes the account match a setup file; a second apply changes nothing. */
import { isOn } from '@docex/cli-kit/args';
import type { Command } from '@docex/cli-kit/command';
import { EXIT } from '@docex/cli-kit/exit-codes';
import type { Action } from './setup/plan.ts';
import { planFor, PRUNE_FLAG } from './templates-plan.ts';

const REPORT_LABEL: Record<Action['kind'], string> = { create: '+', update: '~', delete: '-' };

export const command: Command = {
  name: 'templates apply',
  usage: 'docex templates apply FILE [--prune] [--rerun [--override]]',
  description: `Makes the account match FILE, in dependency order; a second apply changes nothing. Reports the
templates whose extraction changed; --rerun reruns their documents (--override forces it).`,
  flags: [
    PRUNE_FLAG,
    { name: 'rerun', help: 'rerun the documents of templates whose extraction changed' },
    { name: 'override', help: 'with --rerun: rerun even documents the service would skip' },
  ],
  maxArgs: 1,
  async run(options, io) {
    const { ctx, client, account, planned } = await planFor(options, io, 'docex templates apply');
    const [{ checkPrune }, { applyPlan, rerunTemplates }, { json }] = await Promise.all([
      import('./setup/plan.ts'),
      import('./setup/remote.ts'),
      import('./output.ts'),
    ]);
    const rerun = isOn(options, 'rerun');
    checkPrune(planned, isOn(options, 'prune'));
    const { templateIds } = await applyPlan(client, planned, account, (a) => {
      if (!ctx.json)
        ctx.out(
          `${REPORT_LABEL[a.kind]} ${a.label}${a.what === 'field' || a.what === 'instruction' ? ` in template "${a.template}"` : ''}`,
        );
    });
    const reruns = rerun
      ? await rerunTemplates(client, planned.extractionChanged, templateIds, isOn(options, 'override'))
      : [];
    if (ctx.json) {
      ctx.out(json({ applied: planned.actions, extractionChanged: planned.extractionChanged, reruns }));
      return EXIT.ok;
    }
    ctx.out(
      planned.actions.length
        ? `Applied ${planned.actions.length} change(s).`
        : 'No changes: the account matches the file.',
    );
    if (planned.extractionChanged.length)
      ctx.out(
        `Extraction changed for: ${planned.extractionChanged.map((t) => `"${t}"`).join(', ')}${
          rerun
            ? ''
            : ' (docex templates apply --rerun, or docex rerun --template ID, reruns their documents)'
        }`,
      );
    for (const r of reruns)
      ctx.out(
        `Rerun of "${r.template}": ${r.rerun} dispatched, ${r.not_rerun} not rerun, of ${r.documents} document(s)${r.failed ? `, ${r.failed} failed` : ''}.`,
      );
    return reruns.some((r) => r.failed) ? EXIT.failure : EXIT.ok;
  },
};
