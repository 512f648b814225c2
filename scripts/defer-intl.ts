/**
 * An esbuild plugin for the daemon's bundles: @sindresorhus/is (got's type checks) makes two
 * Intl.ListFormat objects when its module is evaluated, for the wording of one kind of TypeError
 * (assertAll / assertAny). The first Intl.ListFormat of a process loads ICU's locale data: ~20 ms,
 * a sixth of `docex folders list`'s start, for a message no command prints when all goes well.
 * Here each is made on its first use instead, with the same locale and options, so the message is
 * the same. A build fails when the source no longer holds exactly the two: a new version of the
 * package is then read again, not silently left eager.
 */
import { readFile } from 'node:fs/promises';
import type { Plugin } from 'esbuild';

const LIST_FORMAT = /new Intl\.ListFormat\(/g;
const EXPECTED = 2;

const LAZY = `
function __docexLazyListFormat(locale, options) {
  var made;
  return {
    format: function (list) {
      return (made || (made = new Intl.ListFormat(locale, options))).format(list);
    },
  };
}
`;

/** The module's source with each `new Intl.ListFormat(...)` made on first use. */
export function deferListFormat(source: string, file = '@sindresorhus/is'): string {
  const found = source.match(LIST_FORMAT)?.length ?? 0;
  if (found !== EXPECTED)
    throw new Error(
      `${file}: expected ${EXPECTED} "new Intl.ListFormat(" to defer, found ${found}: read scripts/defer-intl.ts again`,
    );
  return `${source.replace(LIST_FORMAT, '__docexLazyListFormat(')}${LAZY}`;
}

export const deferIntl: Plugin = {
  name: 'defer-intl',
  setup(build) {
    build.onLoad({ filter: /[/\\]@sindresorhus[/\\]is[/\\]distribution[/\\]index\.js$/ }, async (args) => ({
      contents: deferListFormat(await readFile(args.path, 'utf8'), args.path),
      loader: 'js',
    }));
  },
};
