/**
 * The emulator and the client each state the API document's enums on their own, so that a typo in
 * one is not silently shared by the other. This is where the two copies must agree.
 */
import { describe, expect, it } from 'vitest';
import * as emulator from '../../emulator/routes/catalog.ts';
import * as client from '@docex/shared';

describe('enums of the API document', () => {
  it.each(['FIELD_TYPES', 'LOCALES', 'PARAMETER_FORMATS'] as const)(
    '%s: the emulator and the client agree',
    (name) => {
      expect([...emulator[name]].sort()).toEqual([...client[name]].sort());
    },
  );
});
