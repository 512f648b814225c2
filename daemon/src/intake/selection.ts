/**
 * Which files a watch takes: the built-in ignored names (temporary, system, hidden, our own
 * error reports), its ignore_names, and its include/exclude patterns, compiled once per watch.
 */
import { globMatcher, nameRegExp, type WatchConfig } from '../config/config.ts';

const IGNORED_NAMES = [
  /^\./,
  /^~\$/,
  /^thumbs\.db$/i,
  /^desktop\.ini$/i,
  /\.(part|tmp|temp|crdownload|download|partial|swp)$/i,
  /~$/,
  /\.error\.json$/i,
];

type Matcher = (unixRel: string) => boolean;
interface Matchers {
  include: Matcher[];
  exclude: Matcher[];
  /** The built-in names and the watch's ignore_names as one test of a single part of a path. */
  ignoredName: (name: string) => boolean;
}
/** Each watch's patterns compiled once, not once per file looked at. */
const matchersOf = new WeakMap<WatchConfig, Matchers>();
function matchers(watch: WatchConfig): Matchers {
  let m = matchersOf.get(watch);
  if (!m) {
    // One alternation instead of a test per pattern: a scan tests every name it lists (a
    // million at the start of a large share), and 15 tests per name were a tenth of the scan.
    const names = new RegExp(
      [...IGNORED_NAMES, ...(watch.ignore_names ?? []).map(nameRegExp)]
        .map((re) => `(?:${re.source})`)
        .join('|'),
      'i',
    );
    m = {
      include: watch.include.map(globMatcher),
      exclude: watch.exclude.map(globMatcher),
      ignoredName: (name) => names.test(name),
    };
    matchersOf.set(watch, m);
  }
  return m;
}

/**
 * Whether a walk skips this entry whatever it is (file or folder): a temporary, system or hidden
 * name in its path (the built-in list or the watch's ignore_names, e.g. a NAS's `@eaDir`), or an exclude pattern matching it (a folder also when a pattern matches what is
 * inside it, so `archive/**` keeps the walk out of `archive/`). Include patterns do not apply here:
 * they select files, and a folder must be entered to find the files it holds.
 */
export function isExcluded(watch: WatchConfig, rel: string, isFolder = false): boolean {
  const parts = rel.split(/[\\/]/);
  if (parts.some(matchers(watch).ignoredName)) return true;
  return excludedPath(watch, parts.join('/'), isFolder);
}

function excludedPath(watch: WatchConfig, unixRel: string, isFolder: boolean): boolean {
  const { exclude } = matchers(watch);
  if (exclude.length === 0) return false;
  if (exclude.some((m) => m(unixRel))) return true;
  return isFolder && exclude.some((m) => m(`${unixRel}/\0`));
}

/** Whether a file is left alone: excluded (see isExcluded), or not matched by any include pattern. */
export function isIgnored(watch: WatchConfig, rel: string): boolean {
  if (isExcluded(watch, rel)) return true;
  return !included(watch, rel.split(/[\\/]/).join('/'));
}

function included(watch: WatchConfig, unixRel: string): boolean {
  const { include } = matchers(watch);
  return include.length === 0 || include.some((m) => m(unixRel));
}

/**
 * isIgnored for a file a walk found in a folder it entered, so whose folders passed isExcluded:
 * only the file's own name is tested against the ignored names. `unixRelDir` is the folder's
 * '/'-separated path relative to the watch, with a trailing '/' (or '' for the watched folder).
 */
export function isIgnoredInFolder(watch: WatchConfig, unixRelDir: string, name: string): boolean {
  if (matchers(watch).ignoredName(name)) return true;
  const unixRel = unixRelDir + name;
  return excludedPath(watch, unixRel, false) || !included(watch, unixRel);
}
