/** Prometheus metrics (prom-client), on the loopback listener's /metrics. */
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import type { StateDb } from '../store/state.ts';

/**
 * `processMetrics`: Node's process metrics too, only worth having when /metrics is served. Their
 * event-loop monitor samples on a timer, so it runs once a second, not prom-client's 100 times:
 * an idle daemon stays idle.
 */
export function createMetrics(db: StateDb, options: { processMetrics?: boolean } = {}) {
  const registry = new Registry();
  if (options.processMetrics ?? true)
    collectDefaultMetrics({ register: registry, prefix: 'docex_sync_', eventLoopMonitoringPrecision: 1000 });
  new Gauge({
    name: 'docex_sync_files',
    help: 'Files in the state DB, by state',
    labelNames: ['state'],
    registers: [registry],
    collect() {
      for (const [state, n] of Object.entries(db.fileCounts.counts())) this.set({ state }, n);
    },
  });
  return {
    registry,
    discovered: new Counter({
      name: 'docex_sync_discovered_total',
      help: 'Files discovered',
      registers: [registry],
    }),
    uploads: new Counter({ name: 'docex_sync_uploads_total', help: 'Files uploaded', registers: [registry] }),
    processed: new Counter({
      name: 'docex_sync_processed_total',
      help: 'Files finished with results',
      labelNames: ['outcome'],
      registers: [registry],
    }),
    failed: new Counter({ name: 'docex_sync_failed_total', help: 'Files failed', registers: [registry] }),
    apiErrors: new Counter({
      name: 'docex_sync_api_errors_total',
      help: 'API calls that failed after the client retries',
      labelNames: ['operation'],
      registers: [registry],
    }),
    pulls: new Counter({
      name: 'docex_sync_pulled_documents_total',
      help: 'Documents written by pulls',
      registers: [registry],
    }),
  };
}
export type Metrics = ReturnType<typeof createMetrics>;
