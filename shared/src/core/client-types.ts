/**
 * The client's options and the types of its calls: each operation's input and output, derived from
 * the operation table (operations.ts), and the method per operation. Types only, but camelCase.
 */
import type { z } from 'zod/v4';
import type { SettingTerms } from './hints.ts';
import type { OperationName, Operations } from './operations.ts';
import type { RetryPolicy } from './retry.ts';
import type { FileInput, Logger, Sleep, Transport } from './transport.ts';

export interface ClientOptions {
  transport: Transport;
  sleep: Sleep;
  /** Wall-clock time in ms (Date.now): reads the server's dates (an HTTP-date Retry-After). */
  now?: () => number;
  /**
   * A steady clock in ms for durations (429 cool-downs, task waits and their deadlines): one that a
   * wall-clock step (NTP, a VM resumed, a manual change) does not move, e.g. performance.now.
   * Default: `now`.
   */
  elapsed?: () => number;
  random?: () => number;
  logger?: Logger;
  retry?: Partial<RetryPolicy>;
  /** Per-request timeout in ms (default 60 s; uploads and downloads may want more). */
  timeoutMs?: number;
  instructionIdIn?: 'query' | 'path';
  /** Scrubs secrets from anything the server echoes into an error message. */
  redact?: (text: string) => string;
  /** Where the program's user sets the URL, key, proxy and CA its messages name (hints.ts; default: these options' names). */
  terms?: SettingTerms;
}

export interface CallOptions {
  signal?: AbortSignal;
  timeoutMs?: number;
  /** Among this client's requests waiting for a free slot, higher goes first (default 0; ties in order). */
  priority?: number;
  retry?: Partial<RetryPolicy>;
  instructionIdIn?: 'query' | 'path';
}

/** A downloaded file: read `body` once (stream it to disk, or collect it with readAll). */
export interface BinaryResult {
  /** From Content-Disposition, already made safe (a bare name, no directories). */
  fileName: string | null;
  contentType: string | null;
  size: number | null;
  body: AsyncIterable<Uint8Array>;
}

type KindTypes = {
  integer: number;
  string: string;
  boolean: boolean;
  date: string | Date;
  datetime: string | Date;
  'integer[]': number[];
  'string[]': string[];
  metadata: string | Record<string, unknown>;
  file: FileInput;
  'file[]': FileInput[];
};
type ValueOf<P> = P extends { values: readonly (infer V)[] }
  ? V
  : P extends { kind: infer K extends keyof KindTypes }
    ? KindTypes[K]
    : never;
type ParamsOf<K extends OperationName> = Operations[K]['params'][number];
type Simplify<T> = { [K in keyof T]: T[K] } & {};

/** An operation without parameters takes no keys at all, so `checkApiKey({ signal })` is a type error. */
export type InputOf<K extends OperationName> = [ParamsOf<K>] extends [never]
  ? Record<string, never>
  : Simplify<
      { [P in ParamsOf<K> as P extends { required: true } ? P['name'] : never]: ValueOf<P> } & {
        [P in ParamsOf<K> as P extends { required: true } ? never : P['name']]?: ValueOf<P> | null;
      }
    >;
export type OutputOf<K extends OperationName> = Operations[K] extends { output: 'binary' }
  ? BinaryResult
  : Operations[K] extends { output: 'empty' }
    ? void
    : Operations[K] extends { schema: infer Schema extends z.ZodType }
      ? z.output<Schema>
      : unknown;
export type CallArgs<K extends OperationName> =
  {} extends InputOf<K>
    ? [input?: InputOf<K>, options?: CallOptions]
    : [input: InputOf<K>, options?: CallOptions];

type CamelCase<S extends string> = S extends `${infer Head}_${infer Tail}`
  ? `${Head}${Capitalize<CamelCase<Tail>>}`
  : S;
export type OperationMethods = {
  [K in OperationName as CamelCase<K>]: (...args: CallArgs<K>) => Promise<OutputOf<K>>;
};
export const camelCase = (name: string) => name.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());

/** `call` itself, as something else may hold it (many.ts). */
export type CallFn = <K extends OperationName>(name: K, ...args: CallArgs<K>) => Promise<OutputOf<K>>;
