/** The trigger's memory of known document IDs (nodes/DocexTrigger/known.ts): ranges, merged. */
import { describe, expect, it } from 'vitest';
import { addIds, hasId, type IdRanges } from '../../nodes/DocexTrigger/known.ts';

describe('known document IDs', () => {
  it('keeps consecutive IDs as one range, in any order of arrival', () => {
    const ranges: IdRanges = [];
    addIds(ranges, [5, 3, 4, 10, 1, 2, 9, 11, 4]);
    expect(ranges).toEqual([
      [1, 5],
      [9, 11],
    ]);
    addIds(ranges, [7, 8, 6]);
    expect(ranges).toEqual([[1, 11]]);
  });

  it('answers membership at range edges and in gaps', () => {
    const ranges = addIds([], [1, 2, 3, 7, 20, 21]);
    for (const id of [1, 3, 7, 20, 21]) expect(hasId(ranges, id), String(id)).toBe(true);
    for (const id of [0, 4, 6, 8, 19, 22, 1000]) expect(hasId(ranges, id), String(id)).toBe(false);
  });

  it('stays small for a million sequential IDs and ignores what is not an integer', () => {
    const ranges = addIds(
      [],
      Array.from({ length: 1_000_000 }, (_, i) => i + 1),
    );
    addIds(ranges, [Number.NaN, 1.5]);
    expect(ranges).toEqual([[1, 1_000_000]]);
  });
});
