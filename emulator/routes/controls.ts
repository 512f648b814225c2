/** Test controls under /__emulator (only when enabled): reset, faults, statistics, agents. */
import type { FastifyInstance } from 'fastify';
import { HttpError, type Ctx } from '../routing.ts';
import type { FaultConfig } from '../faults.ts';

export function registerControls(app: FastifyInstance, ctx: Ctx) {
  app.post('/__emulator/reset', async () => {
    ctx.world.reset();
    ctx.stats.reset();
    ctx.faults.clear();
    return { reset: true };
  });
  app.put('/__emulator/faults', async (req) => {
    ctx.faults.set((req.body ?? {}) as FaultConfig);
    return ctx.faults.config;
  });
  app.delete('/__emulator/faults', async () => {
    ctx.faults.clear();
    return {};
  });
  app.get('/__emulator/stats', async () => ctx.stats.snapshot());
  app.post('/__emulator/reset-stats', async () => {
    ctx.stats.reset();
    return {};
  });
  app.post('/__emulator/agents', async (req) => {
    const body = (req.body ?? {}) as {
      api_key?: string;
      type?: string;
      template_ids?: number[];
      active?: boolean;
    };
    const company = ctx.world.companyByKey(body.api_key ?? '');
    if (!company) throw new HttpError(400, { detail: 'api_key of a company is required' });
    return createAgent(
      ctx,
      company.id,
      body.type ?? 'datatable_match',
      body.template_ids ?? [],
      body.active ?? true,
    );
  });
  app.get('/__emulator/agents/:id', async (req) => {
    const agent = ctx.world.agents.get(Number((req.params as { id: string }).id));
    if (!agent) throw new HttpError(404, { detail: 'Agent not found' });
    return agent;
  });
}

export function createAgent(
  ctx: Ctx,
  companyId: number,
  type: string,
  templateIds: number[],
  active: boolean,
) {
  const agent = { id: ctx.world.nextId('agent'), companyId, type, templateIds, active, datatable: null };
  ctx.world.agents.set(agent.id, agent);
  return agent;
}
