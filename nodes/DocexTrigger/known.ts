/**
 * "New document" events: a document is new the first time the trigger sees it. The trigger keeps
 * every document ID it knows as sorted, disjoint ranges of integers in its static data: the
 * service's IDs are integers, and when they are handed out in sequence (the usual case, though the
 * API document does not say so) a million documents take a few ranges; when they are not, the
 * ranges degrade to a list, still correct. Pure functions, kept apart from n8n.
 */

/** [first, last] pairs, sorted, neither overlapping nor touching. */
export type IdRanges = Array<[number, number]>;

/** Index of the first range whose end is >= id (binary search). */
function firstEndingAtOrAfter(ranges: IdRanges, id: number): number {
  let lo = 0;
  let hi = ranges.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (ranges[mid]![1] < id) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

export function hasId(ranges: IdRanges, id: number): boolean {
  const r = ranges[firstEndingAtOrAfter(ranges, id)];
  return r !== undefined && r[0] <= id;
}

/** Adds ids in place (the static data is changed in place, see docs/n8n.md). */
export function addIds(ranges: IdRanges, ids: Iterable<number>): IdRanges {
  for (const id of ids) {
    if (!Number.isSafeInteger(id) || hasId(ranges, id)) continue;
    const at = firstEndingAtOrAfter(ranges, id);
    const before = ranges[at - 1];
    const after = ranges[at];
    const joinsBefore = before !== undefined && before[1] === id - 1;
    const joinsAfter = after !== undefined && after[0] === id + 1;
    if (joinsBefore && joinsAfter) {
      before[1] = after[1];
      ranges.splice(at, 1);
    } else if (joinsBefore) before[1] = id;
    else if (joinsAfter) after[0] = id;
    else ranges.splice(at, 0, [id, id]);
  }
  return ranges;
}
