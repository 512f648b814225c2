/** Help text laid out for a terminal: two columns, wrapped to HELP_WIDTH. Pure; imports nothing. */

/** Help fits a terminal of this many columns (a value list such as --format's wraps). */
export const HELP_WIDTH = 100;
/** The left column's widest entry; a longer one puts its description on the lines below. */
const LEFT_MAX = 34;

/** Words of `text` on lines of at most `width`; breaks after a space, a "|" or a ",". */
export function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const token of text.split(/(?<=[ |,])/)) {
    if (line && (line + token).trimEnd().length > width) {
      lines.push(line.trimEnd());
      line = token.trimStart();
    } else line += token;
  }
  if (line.trim()) lines.push(line.trimEnd());
  return lines;
}

/** Two columns (flag or command, what it does), wrapped to HELP_WIDTH. */
export function columns(rows: ReadonlyArray<readonly [string, string]>): string {
  const left = Math.min(LEFT_MAX, Math.max(...rows.map(([a]) => a.length)));
  const indent = ' '.repeat(2 + left + 2);
  const right = HELP_WIDTH - indent.length;
  return rows
    .flatMap(([a, b]) => {
      const description = wrap(b, right);
      if (a.length <= left)
        return [
          `  ${a.padEnd(left)}  ${description[0] ?? ''}`.trimEnd(),
          ...description.slice(1).map((d) => indent + d),
        ];
      // Too wide for the column: the flag on its own lines (its continuations indented), then the text.
      const [first = '', ...more] = wrap(a, HELP_WIDTH - 2);
      const rest = more.flatMap((m) => wrap(m, HELP_WIDTH - 6)).map((m) => `      ${m}`);
      return [`  ${first}`, ...rest, ...description.map((d) => indent + d)];
    })
    .join('\n');
}
