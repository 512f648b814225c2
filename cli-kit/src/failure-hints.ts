/**
 * What both binaries add to a failure the service answered, when saying it (docex's failure.ts,
 * docex-sync's Program.fail): the hint of the one table (shared/src/core/hints.ts) in the binary's
 * terms. The client's network errors carry theirs already (each binary gives the client its terms).
 */
import {
  DocexError,
  DocexNotFoundError,
  HINTS,
  OPERATIONS,
  type OperationName,
  type SettingTerms,
} from '@docex/shared';

/** An operation given no id: a 404 to it can only mean that no service answers at the address. */
const namesNothing = (operation: string) =>
  (OPERATIONS[operation as OperationName]?.params ?? [{ name: '_id' }]).every((p) => !/_ids?$/.test(p.name));

/** The hint for `error`, if the table has one: a refused key, an address where no service answers. */
export function hintFor(error: unknown, terms: () => SettingTerms): string | undefined {
  if (!(error instanceof DocexError)) return undefined;
  if (error.kind === 'auth') return HINTS.keyRefused(terms());
  if (error instanceof DocexNotFoundError && namesNothing(error.operation)) return HINTS.noService(terms());
  return undefined;
}

/** `message` and the hint for `error` after it (`terms` is asked only when there is one). */
export function withHint(message: string, error: unknown, terms: () => SettingTerms): string {
  const hint = hintFor(error, terms);
  return hint && !message.includes(hint) ? `${message}; ${hint}` : message;
}
