/** Bounded concurrency and "unless deleted" live in the core, shared with the trigger and the daemon. */
export { mapLimit, unlessMissing } from '@docex/shared';
