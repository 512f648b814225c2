/** Answers as text: JSON for scripts, plain tables for people. Pure. */

const MAX_CELL = 60;

/** An entry of a nested list in one cell: "Invoice (12)" for a short template, else its JSON. */
function entry(value: unknown): string {
  if (isRecord(value) && typeof value.name === 'string' && value.id !== undefined)
    return `${value.name} (${String(value.id)})`;
  return typeof value === 'string' ? value : JSON.stringify(value);
}

function cell(value: unknown): string {
  if (value === null || value === undefined) return '';
  const text =
    typeof value === 'string'
      ? value
      : Array.isArray(value)
        ? value.map(entry).join(', ')
        : JSON.stringify(value);
  const line = text.replace(/\s+/g, ' ');
  return line.length > MAX_CELL ? `${line.slice(0, MAX_CELL - 1)}…` : line;
}

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

export function table(rows: ReadonlyArray<Record<string, unknown>>): string {
  if (rows.length === 0) return '(none)';
  const columns = [...new Set(rows.flatMap((r) => Object.keys(r)))];
  const cells = rows.map((r) => columns.map((c) => cell(r[c])));
  const widths = columns.map((c, i) => Math.max(c.length, ...cells.map((row) => row[i]!.length)));
  const line = (values: string[]) =>
    values
      .map((v, i) => v.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  return [line(columns.map((c) => c.toUpperCase())), ...cells.map(line)].join('\n');
}

function keyValues(object: Record<string, unknown>): string {
  const entries = Object.entries(object).filter(([, v]) => v !== undefined);
  const width = Math.max(0, ...entries.map(([k]) => k.length));
  return entries
    .map(([k, v]) =>
      isRecord(v) || (Array.isArray(v) && v.some(isRecord))
        ? `${k}:\n${indent(render(v))}`
        : `${k.padEnd(width)}  ${Array.isArray(v) ? v.map(cell).join(', ') : cell(v)}`,
    )
    .join('\n');
}

const indent = (text: string) =>
  text
    .split('\n')
    .map((l) => `  ${l}`)
    .join('\n');

/** Human form of an answer: a list of objects as a table, an object as key/value lines. */
export function render(value: unknown): string {
  if (Array.isArray(value)) {
    if (value.every(isRecord)) return table(value);
    return value.map(cell).join('\n');
  }
  if (isRecord(value)) {
    const keys = Object.keys(value);
    // { folders: [...] } → the list itself
    if (keys.length === 1 && Array.isArray(value[keys[0]!])) return render(value[keys[0]!]);
    return keyValues(value);
  }
  return cell(value);
}

export const json = (value: unknown) => JSON.stringify(value, null, 2);
