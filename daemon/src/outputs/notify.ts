/**
 * Webhook notifications (`notify:` in the config): a JSON POST per event to each webhook that asked
 * for it. Sending never blocks the pipeline: events go into a bounded in-memory queue, each
 * delivery is retried with exponential backoff, and nothing from the API's credentials is ever in
 * a request. Payloads are documented in docs/reference/notifications.md ("Notifications").
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { ConfigSlice, NotifyConfig, NotifyEventName } from '../config/config.ts';
import type { FileRow } from '../domain/lifecycle.ts';
import { heldReview } from './review.ts';

export { NOTIFY_EVENTS, type NotifyConfig, type NotifyEventName } from '../config/config.ts';

export interface NotifyEvent {
  event: NotifyEventName;
  /** Unique per event; the same on every retry, so a receiver can drop repeats. */
  id: string;
  at: string;
  source: { service: 'docex-sync'; host: string };
  data: Record<string, unknown>;
}

interface Delivery {
  url: string;
  headers: Record<string, string>;
  event: NotifyEvent;
}

export interface NotifierOptions {
  /** fetch, replaceable in tests. */
  fetch?: typeof fetch;
  now?: () => number;
}

export class Notifier {
  private readonly queue: Delivery[] = [];
  private readonly active = new Set<Promise<void>>();
  private readonly stopping = new AbortController();
  private readonly fetch: typeof fetch;
  private readonly now: () => number;
  private readonly host = hostname();
  /** Delivered, given up, dropped (queue full): for the status page and tests. */
  readonly counts = { sent: 0, failed: 0, dropped: 0 };

  private readonly config: NotifyConfig;
  private readonly log: Logger;

  constructor(config: NotifyConfig, log: Logger, options: NotifierOptions = {}) {
    this.config = config;
    this.log = log;
    this.fetch = options.fetch ?? fetch;
    this.now = options.now ?? Date.now;
  }

  fileFailed(data: {
    file: string;
    watch: string;
    reason: string | null;
    attempts: number;
    task_id: string | null;
    document_id: number | null;
  }) {
    this.emit('file_failed', data);
  }

  watchPaused(data: { watch: string; reason: string; since?: string }) {
    this.emit('watch_paused', data);
  }

  rerunFinished(name: string, outcome: object) {
    this.emit('rerun_finished', { name, ...outcome });
  }

  resultWritten(data: {
    file: string;
    watch: string;
    document_id: number;
    outcome: string;
    results: string[];
  }) {
    this.emit('result_written', data);
  }

  /** A document waits in review_dir for a person: which rules fired, with the field, value and threshold. */
  needsReview(row: FileRow) {
    const held = heldReview(row);
    this.emit('needs_review', {
      file: row.path,
      watch: row.watch,
      route: row.route,
      original: row.review_path ?? row.path,
      document_id: row.document_id,
      task_id: row.task_id,
      reasons: held.reasons,
      fraud: held.fraud,
    });
  }

  /** Queues one delivery per webhook that wants this event; returns at once. */
  emit(name: NotifyEventName, data: Record<string, unknown>) {
    const event: NotifyEvent = {
      event: name,
      id: randomUUID(),
      at: new Date(this.now()).toISOString(),
      source: { service: 'docex-sync', host: this.host },
      data,
    };
    for (const hook of this.config.webhooks) {
      if (!hook.events.includes(name)) continue;
      if (this.queue.length >= this.config.queue_size) {
        const dropped = this.queue.shift()!;
        this.counts.dropped++;
        this.log.warn(
          { webhook: redactUrl(dropped.url), event: dropped.event.event },
          'notification queue full: the oldest notification is dropped',
        );
      }
      this.queue.push({ url: hook.url, headers: hook.headers, event });
    }
    this.pump();
  }

  /** Waits up to graceMs for deliveries in flight and queued, then abandons the rest (logged). */
  async close(graceMs = this.config.shutdown_grace_ms) {
    const settled = (async () => {
      while (!this.stopping.signal.aborted && (this.active.size || this.queue.length))
        await Promise.allSettled([...this.active]);
    })();
    await Promise.race([settled, sleep(graceMs, undefined, { ref: false })]);
    this.stopping.abort();
    await Promise.allSettled([...this.active]);
    if (this.queue.length)
      this.log.warn({ notifications: this.queue.length }, 'stopping: notifications not sent');
    this.queue.length = 0;
  }

  private pump() {
    while (!this.stopping.signal.aborted && this.active.size < this.config.concurrency && this.queue.length) {
      const delivery = this.queue.shift()!;
      const job: Promise<void> = this.deliver(delivery).finally(() => {
        this.active.delete(job);
        this.pump();
      });
      this.active.add(job);
    }
  }

  private async deliver({ url, headers, event }: Delivery) {
    const { max_attempts, retry_base_ms, retry_max_ms, timeout_ms } = this.config;
    const body = JSON.stringify(event);
    for (let attempt = 1; ; attempt++) {
      let problem: string;
      let permanent = false;
      try {
        const answer = await this.fetch(url, {
          method: 'POST',
          headers: {
            ...headers,
            'content-type': 'application/json',
            'user-agent': 'docex-sync/0.1',
            'x-docex-event': event.event,
            'x-docex-event-id': event.id,
          },
          body,
          signal: AbortSignal.any([AbortSignal.timeout(timeout_ms), this.stopping.signal]),
        });
        await answer.body?.cancel();
        if (answer.ok) {
          this.counts.sent++;
          this.log.debug({ webhook: redactUrl(url), event: event.event, attempt }, 'notification sent');
          return;
        }
        problem = `HTTP ${answer.status}`;
        permanent = answer.status >= 400 && answer.status < 500 && ![408, 425, 429].includes(answer.status);
      } catch (error) {
        problem = (error as Error).message;
      }
      if (permanent || attempt >= max_attempts || this.stopping.signal.aborted) {
        this.counts.failed++;
        this.log.warn(
          { webhook: redactUrl(url), event: event.event, attempts: attempt, err: problem },
          'notification not delivered',
        );
        return;
      }
      const wait = Math.min(retry_max_ms, retry_base_ms * 2 ** (attempt - 1)) * (0.75 + Math.random() / 2);
      await sleep(wait, undefined, { signal: this.stopping.signal, ref: false }).catch(() => undefined);
    }
  }
}

/** Webhook URLs may hold a secret in the path or query (n8n's do not, others' may): logs show the origin. */
export const redactUrl = (url: string) => {
  try {
    return `${new URL(url).origin}/…`;
  } catch {
    return 'webhook';
  }
};

export function createNotifier(
  config: ConfigSlice<'notify'>,
  log: Logger,
  options?: NotifierOptions,
): Notifier | undefined {
  return config.notify?.webhooks.length ? new Notifier(config.notify, log, options) : undefined;
}
