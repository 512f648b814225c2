/** When to try a request again, and how long to wait first. Pure: time and randomness come in. */
import {
  DocexApiError,
  DocexConnectionError,
  DocexProxyAuthError,
  DocexTlsError,
  DocexError,
  DocexRateLimitError,
} from './errors.ts';

export interface RetryPolicy {
  /** Further attempts after the first (0 disables retries). */
  maxRetries: number;
  initialDelayMs: number;
  maxDelayMs: number;
  factor: number;
  /** A Retry-After longer than this is not waited out: the error goes to the caller instead. */
  maxRetryAfterMs: number;
  /**
   * A 429 is retried beyond `maxRetries` while the retry starts within this many ms of the call's
   * first attempt (default: none, `maxRetries` alone counts). For callers that share a limit with
   * many others (n8n executions of one credential), where a refusal says "your turn comes later",
   * not "this request is wrong".
   */
  rateLimitBudgetMs?: number;
}

export const DEFAULT_RETRY: RetryPolicy = {
  maxRetries: 4,
  initialDelayMs: 500,
  maxDelayMs: 30_000,
  factor: 2,
  maxRetryAfterMs: 120_000,
};

export interface RetryContext {
  /** Repeating the operation cannot change its outcome. */
  idempotent: boolean;
  /** The request body can be sent again (no one-shot stream). */
  replayable: boolean;
  /** The failure happened before the server could have seen the request. */
  notSent: boolean;
}

/**
 * The retry rule (docs/decisions.md):
 * - never when the body cannot be replayed, or after an abort;
 * - 429: always (the server refused without acting), after Retry-After when given;
 * - connection refused / DNS failures (request not sent): always;
 * - 408, 5xx, timeouts and other connection errors: only idempotent operations, because an upload,
 *   create or rerun may already have been carried out.
 */
export function shouldRetry(error: DocexError, ctx: RetryContext): boolean {
  if (!ctx.replayable) return false;
  // A proxy that wants credentials or a certificate we do not trust answers the same a second later.
  if (error instanceof DocexProxyAuthError || error instanceof DocexTlsError) return false;
  if (error instanceof DocexRateLimitError) return true;
  // Not sent: refused, unresolved, unreachable, or not connected within the timeout.
  if (error instanceof DocexConnectionError && ctx.notSent) return true;
  if (!ctx.idempotent) return false;
  if (error instanceof DocexConnectionError) return true;
  return error instanceof DocexApiError && (error.status === 408 || error.status >= 500);
}

/**
 * Exponential backoff with jitter (half fixed, half random, so waits never collapse to 0). A positive
 * server-given wait wins; `Retry-After: 0` (or a date already past) is read as "no wait given", so a
 * busy server is not hammered in a tight loop.
 */
export function retryDelayMs(
  attempt: number,
  policy: RetryPolicy,
  random: () => number,
  serverWaitMs?: number,
): number | undefined {
  if (serverWaitMs !== undefined && serverWaitMs > 0)
    return serverWaitMs <= policy.maxRetryAfterMs ? serverWaitMs : undefined;
  const ceiling = Math.min(policy.maxDelayMs, policy.initialDelayMs * policy.factor ** attempt);
  return Math.round(ceiling / 2 + (random() * ceiling) / 2);
}
