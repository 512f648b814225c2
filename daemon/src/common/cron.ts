/**
 * The cron schedules of docex-sync's config (a rerun's, a pull's, retention's), checked when the
 * config is read (`run` and `check` alike): node-cron's own validator, and what it lets through
 * although nothing runs as written (a step larger than its field, "*\/61": every 61 minutes runs
 * once an hour). A problem names the field and its range.
 */
import { nodeCron } from '@docex/cli-kit/lazy';

interface Field {
  name: string;
  /** Plural, for "minutes go from 0 to 59". */
  plural: string;
  min: number;
  max: number;
  /** A sound step, for the example. */
  step: number;
}

const SECOND: Field = { name: 'second', plural: 'seconds', min: 0, max: 59, step: 15 };
const FIELDS: readonly Field[] = [
  { name: 'minute', plural: 'minutes', min: 0, max: 59, step: 15 },
  { name: 'hour', plural: 'hours', min: 0, max: 23, step: 2 },
  { name: 'day-of-month', plural: 'days of the month', min: 1, max: 31, step: 2 },
  { name: 'month', plural: 'months', min: 1, max: 12, step: 3 },
  // 0 and 7 are both Sunday.
  { name: 'day-of-week', plural: 'days of the week', min: 0, max: 7, step: 2 },
];
/** node-cron's names of the fields, in its validateDetailed errors. */
const NODE_CRON_FIELD: Record<string, string> = {
  second: 'second',
  minute: 'minute',
  hour: 'hour',
  dayOfMonth: 'day-of-month',
  month: 'month',
  dayOfWeek: 'day-of-week',
};

const SHAPE =
  'a schedule has 5 (minute hour day-of-month month day-of-week), or 6 with seconds first, e.g. "30 3 * * *" (03:30 every day)';

/** What is wrong with a cron expression, in one sentence; undefined when it is valid. */
export function cronProblem(expression: string): string | undefined {
  const parts = expression.trim().split(/\s+/);
  const quoted = `"${expression}"`;
  if (!expression.trim().startsWith('@') && parts.length !== 5 && parts.length !== 6)
    return `${quoted} has ${parts.length} field${parts.length === 1 ? '' : 's'}: ${SHAPE}`;
  const fields = parts.length === 6 ? [SECOND, ...FIELDS] : FIELDS;
  // A step no larger than its field's span: from "*" or a range it would stop after the first value.
  for (const [i, part] of parts.entries()) {
    const field = fields[i];
    if (!field) break;
    for (const step of part.matchAll(/\/(\d+)/g)) {
      const n = Number(step[1]);
      const largest = field.max - field.min - (field.name === 'day-of-week' ? 1 : 0);
      if (n > largest)
        return `${quoted}: the ${field.name} field "${part}" steps by ${n}, but ${field.plural} go from ${field.min} to ${field.max}: a step is 1 to ${largest}, e.g. "${field.name === 'minute' ? `*/${field.step} * * * *` : `*/${field.step}`}"`;
    }
  }
  const verdict = nodeCron().validateDetailed(expression);
  if (verdict.valid) return undefined;
  const error = verdict.errors[0]!;
  const name = NODE_CRON_FIELD[error.field];
  const field = [SECOND, ...FIELDS].find((f) => f.name === name);
  if (!field)
    return `${quoted} is not a schedule: use digits, "*", ",", "-" and "/" (and names of months and week days); ${SHAPE}`;
  return `${quoted}: the ${field.name} field "${error.value ?? ''}" is out of range: ${field.plural} go from ${field.min} to ${field.max}`;
}
