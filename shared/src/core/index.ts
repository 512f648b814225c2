export * from './batch.ts';
export * from './changes.ts';
export * from './client.ts';
export * from './client-types.ts';
export * from './errors.ts';
export * from './network-errors.ts';
export * from './fields.ts';
export * from './follow.ts';
export * from './many.ts';
export * from './hints.ts';
export * from './files.ts';
export * from './multipart.ts';
export * from './operations.ts';
export * from './proxy.ts';
export * from './review.ts';
export * from './review-rules.ts';
export {
  DEFAULT_WAIT_TIMEOUT_MS,
  isFinalStatus,
  waitForTask,
  type WaitOptions,
  type WaitResult,
  type PollDeps,
} from './poll.ts';
export {
  bodyIsReplayable,
  buildRequest,
  contentTypeFor,
  fileNameOf,
  toDateTime,
  type BuildOptions,
} from './request.ts';
export {
  DEFAULT_RATE_MARGIN_MS,
  SendRateLimiter,
  type RateLimitOptions,
  type SendTicket,
} from './rate-limit.ts';
export {
  SendSlots,
  spacingMsOf,
  waitForSendSlot,
  type SendSlot,
  type SendSlotsOptions,
  type SlotRate,
  type SlotWaitDeps,
} from './send-slots.ts';
export { DEFAULT_RETRY, retryDelayMs, shouldRetry, type RetryPolicy } from './retry.ts';
export * as schemas from './schemas.ts';
export {
  FINAL_STATUSES,
  normalizeStatus,
  TASK_STATUSES,
  type ApiKeyCheck,
  type BatchFileError,
  type DocumentData,
  type Field,
  type Folder,
  type Instruction,
  type RawText,
  type RerunResult,
  type TaskResult,
  type TaskStatus,
  type Template,
  type UploadResult,
  type ValidationDetail,
} from './schemas.ts';
export * from './transport.ts';
