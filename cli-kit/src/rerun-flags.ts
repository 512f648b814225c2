/**
 * What a bulk rerun selects, read from RERUN_FLAGS (flags.ts) once for `docex rerun` and
 * `docex-sync rerun`: the same checks in both, all before the first call. Pure.
 */
import { text, type Options } from './args.ts';
import { UsageError } from './errors.ts';

export interface RerunSelection {
  template_id: number | undefined;
  folder_id: number | undefined;
  /** The first and last day of creation, YYYY-MM-DD, both included. */
  from: string | undefined;
  to: string | undefined;
}

/** YYYY-MM-DD and a real calendar day, checked before any call; the message names the flag. */
export function dateFlag(flag: string, value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const day = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value);
  const date = day ? new Date(Date.UTC(Number(day[1]), Number(day[2]) - 1, Number(day[3]))) : undefined;
  if (!date || date.toISOString().slice(0, 10) !== value)
    throw new UsageError(`--${flag} must be a calendar date YYYY-MM-DD (got "${value}")`);
  return value;
}

/** An id: 0 names no template or folder, so it is refused rather than sent. */
function positiveFlag(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!/^[1-9]\d*$/.test(value))
    throw new UsageError(`--${flag} must be a positive whole number (got "${value}")`);
  return Number(value);
}

/** The selection the flags give, or a UsageError naming the first flag that is wrong. */
export function rerunSelection(options: Options): RerunSelection {
  const selection: RerunSelection = {
    template_id: positiveFlag('template', text(options, 'template')),
    folder_id: positiveFlag('folder', text(options, 'folder')),
    from: dateFlag('from', text(options, 'from')),
    to: dateFlag('to', text(options, 'to')),
  };
  if (selection.from && selection.to && selection.from > selection.to)
    throw new UsageError(`--from ${selection.from} is after --to ${selection.to}`);
  return selection;
}

/** True when no flag narrows the selection: the whole account. */
export const selectsEverything = (selection: RerunSelection) =>
  Object.values(selection).every((v) => v === undefined);
