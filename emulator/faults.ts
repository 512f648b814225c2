/** Fault injection and statistics for reliability tests and benchmarks (never part of the public API). */

export interface FaultConfig {
  /** Share of requests (0..1) answered with one of `statuses` (default [500, 502, 503]). */
  errorRate?: number;
  statuses?: number[];
  /** Extra latency per request, uniformly in [min, max] ms. */
  latencyMs?: [number, number];
  /** Share of requests whose connection is destroyed without an answer. */
  dropRate?: number;
  /** Above this many requests in any one second, answer 429 with Retry-After. */
  rateLimit?: { perSecond: number; retryAfterSeconds?: number };
  /** Uploads larger than this answer 413. */
  maxUploadBytes?: number;
  /** Make fetch_files_batch fail with BATCH_FILE_FETCH_FAILED. */
  failBatchFetch?: boolean;
  /** Only these operations are affected (default: all). */
  operations?: string[];
}

export interface Stats {
  requestsByOperation: Record<string, number>;
  uploadsByHash: Record<string, number>;
  /** Answers of the API's routes by HTTP status ("200", "429", ...); a dropped connection has none. */
  answersByStatus: Record<string, number>;
  maxRequestsInOneSecond: number;
  /** When the first and the last request since the last reset arrived (the emulator's clock, ms). */
  firstArrivalMs: number | null;
  lastArrivalMs: number | null;
  /** When each request since the last reset arrived, in order (the emulator's clock, ms). */
  arrivalsMs: number[];
  peakConcurrency: number;
  totalRequests: number;
  /** Answers sent while the request's body was still unread: none, as behind nginx (app.ts). */
  answeredBeforeBody: number;
}

export class Faults {
  config: FaultConfig = {};
  private readonly random: () => number;
  constructor(random: () => number = Math.random) {
    this.random = random;
  }
  set(config: FaultConfig) {
    this.config = { ...config };
  }
  clear() {
    this.config = {};
  }
  applies(operation: string) {
    return !this.config.operations || this.config.operations.includes(operation);
  }
  roll(rate: number | undefined) {
    return rate !== undefined && rate > 0 && this.random() < rate;
  }
  pickStatus() {
    const statuses = this.config.statuses?.length ? this.config.statuses : [500, 502, 503];
    return statuses[Math.floor(this.random() * statuses.length)]!;
  }
  latency(): number {
    const [min, max] = this.config.latencyMs ?? [0, 0];
    return max > 0 ? min + this.random() * (max - min) : 0;
  }
}

export class StatsRecorder {
  private requestsByOperation: Record<string, number> = {};
  private uploadsByHash: Record<string, number> = {};
  private answersByStatus: Record<string, number> = {};
  private window: number[] = [];
  private maxPerSecond = 0;
  private firstArrival: number | null = null;
  private lastArrival: number | null = null;
  private arrivals: number[] = [];
  private inFlight = 0;
  private peak = 0;
  private total = 0;
  private beforeBody = 0;

  /** Called when a request arrives; returns how many arrived in the last second (this one included). */
  arrive(operation: string, now: number): number {
    this.total++;
    this.firstArrival ??= now;
    this.lastArrival = now;
    this.arrivals.push(now);
    this.requestsByOperation[operation] = (this.requestsByOperation[operation] ?? 0) + 1;
    this.window.push(now);
    while (this.window.length > 0 && this.window[0]! <= now - 1000) this.window.shift();
    this.maxPerSecond = Math.max(this.maxPerSecond, this.window.length);
    this.inFlight++;
    this.peak = Math.max(this.peak, this.inFlight);
    return this.window.length;
  }
  leave() {
    this.inFlight = Math.max(0, this.inFlight - 1);
  }
  answered(status: number, bodyUnread: boolean) {
    this.answersByStatus[status] = (this.answersByStatus[status] ?? 0) + 1;
    if (bodyUnread) this.beforeBody++;
  }
  upload(sha256: string) {
    this.uploadsByHash[sha256] = (this.uploadsByHash[sha256] ?? 0) + 1;
  }
  snapshot(): Stats {
    return {
      requestsByOperation: { ...this.requestsByOperation },
      uploadsByHash: { ...this.uploadsByHash },
      answersByStatus: { ...this.answersByStatus },
      maxRequestsInOneSecond: this.maxPerSecond,
      firstArrivalMs: this.firstArrival,
      lastArrivalMs: this.lastArrival,
      arrivalsMs: [...this.arrivals],
      peakConcurrency: this.peak,
      totalRequests: this.total,
      answeredBeforeBody: this.beforeBody,
    };
  }
  reset() {
    this.requestsByOperation = {};
    this.uploadsByHash = {};
    this.answersByStatus = {};
    this.window = [];
    this.maxPerSecond = 0;
    this.firstArrival = null;
    this.lastArrival = null;
    this.arrivals = [];
    this.peak = this.inFlight;
    this.total = 0;
    this.beforeBody = 0;
  }
}
