import type { IExecuteFunctions, INodeExecutionData, INodeProperties } from 'n8n-workflow';
import type { DocexClient, OperationSpec, Resource } from '@docex/shared';

/** The API input of one item, read from the node's parameters (snake_case names, as in the table). */
export type ApiInput = Record<string, unknown>;

/** Runs one item of an operation; every returned item carries `pairedItem: { item: i }`. */
export type Runner = (
  ctx: IExecuteFunctions,
  client: DocexClient,
  i: number,
  input: ApiInput,
) => Promise<INodeExecutionData[]>;

/** One item's end in a run over many items at once: its output items, or what failed it. */
export type ItemEnd = { items: INodeExecutionData[] } | { error: unknown };

/**
 * Runs the items of one execution together (Extract: their files share uploads and polls); answers
 * one end per entry, in the order given, each as `run` would have for that item alone.
 */
export type BatchRunner = (
  ctx: IExecuteFunctions,
  client: DocexClient,
  entries: ReadonlyArray<{ i: number; input: ApiInput }>,
) => Promise<ItemEnd[]>;

/** One entry of the node's Operation list. */
export interface NodeOperation {
  /** The option value, saved in workflows: the label in camelCase (naming.ts), e.g. `getAll`, `extract`. */
  readonly value: string;
  readonly resource: Resource;
  /** Shown in the Operation list. */
  readonly name: string;
  /** Sentence shown for the action ("Create a folder"). */
  readonly action: string;
  readonly description: string;
  /** The API operation whose parameters this operation shows and sends. */
  readonly api: OperationSpec;
  /** API parameters this operation asks for at the top although the API has them optional. */
  readonly required?: readonly string[];
  /** Parameters beyond the API's (wait options, output binary field...), shown for this operation only. */
  readonly extraProperties?: readonly INodeProperties[];
  /** Entries of this operation's "Options" collection, next to "Items in Parallel". */
  readonly options?: readonly INodeProperties[];
  /** The file can also come from a URL or base64 text (sources.ts), not only a binary field. */
  readonly sources?: boolean;
  /** Options to keep the input item's fields and binary on the output items (keepInput). */
  readonly keepsInput?: boolean;
  /** Can send items that need review to a second output (review.ts). */
  readonly reviews?: boolean;
  /** Replaces the plain `client.call(api.name, input)`. */
  readonly run?: Runner;
  /** Replaces `run` when the node runs: all items of the execution at once. */
  readonly runAll?: BatchRunner;
}
