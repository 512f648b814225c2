/** Glob patterns of watches and routes, read one way everywhere (picomatch). */
import picomatch from 'picomatch';

/** One reading of a glob everywhere (globMatcher, nameRegExp): they must never differ. */
const GLOB_OPTIONS = { nocase: true, dot: true, windows: false };

/**
 * A glob as a test of a '/'-separated path relative to the watched folder (picomatch, case-insensitive,
 * dot files included): `*` within a name, `**` across folders, `?` one character, `[abc]`, `{a,b}`.
 * A pattern without '/' is matched against the last part of the path (a name anywhere in the tree).
 */
export function globMatcher(glob: string): (unixRel: string) => boolean {
  const test = picomatch(glob, GLOB_OPTIONS);
  if (glob.includes('/')) return test;
  return (unixRel) => test(unixRel.slice(unixRel.lastIndexOf('/') + 1));
}

/** A glob for one name (no '/') as the regular expression globMatcher tests it with. */
export function nameRegExp(glob: string): RegExp {
  return picomatch.makeRe(glob, GLOB_OPTIONS);
}
