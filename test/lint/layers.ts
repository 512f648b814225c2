/**
 * The daemon's layers, lowest first. A file may import (values, types, or lazily) files of its own
 * layer and of lower ranks only; two layers of one rank are siblings and import neither each other
 * nor anything above. A file's layer is the longest prefix of its path in the table.
 */
import type { ImportEdge } from './imports.ts';

export interface Layer {
  name: string;
  rank: number;
  /** Path prefixes (a folder ends with '/') of the files in it. */
  paths: string[];
}

export const DAEMON_LAYERS: Layer[] = [
  // helpers with no notion of the daemon: files, names, logging, YAML, errors, the command kit
  { name: 'support', rank: 0, paths: ['daemon/src/common/'] },
  // the config: schema, loader, and the sections other parts read
  { name: 'config', rank: 1, paths: ['daemon/src/config/'] },
  // pure decisions: a file's lifecycle, poll timing, disk room, routing, the result set
  { name: 'domain', rank: 2, paths: ['daemon/src/domain/'] },
  // the state DB and its room
  { name: 'store', rank: 3, paths: ['daemon/src/store/'] },
  // where files come from (folders, mailboxes) and what is written or sent for them
  { name: 'intake', rank: 4, paths: ['daemon/src/intake/', 'daemon/src/mail/'] },
  { name: 'outputs', rank: 4, paths: ['daemon/src/outputs/'] },
  // carrying a file through its lifecycle: the dispatcher, its steps, the scheduler
  { name: 'pipeline', rank: 5, paths: ['daemon/src/pipeline/'] },
  // scheduled work beside the pipeline, and what a person asks for (retry, approve)
  { name: 'jobs', rank: 6, paths: ['daemon/src/jobs/'] },
  { name: 'actions', rank: 6, paths: ['daemon/src/actions/'] },
  // what the daemon shows
  { name: 'status', rank: 7, paths: ['daemon/src/status/'] },
  // the composition root: wiring and lifecycle of a run, the checks before it
  { name: 'app', rank: 8, paths: ['daemon/src/app/'] },
  // the binaries' commands
  { name: 'commands', rank: 9, paths: ['daemon/src/commands/'] },
  { name: 'docex-cli', rank: 9, paths: ['cli/src/'] },
];

export function layerOf(file: string, layers: Layer[]): Layer | undefined {
  let best: { layer: Layer; length: number } | undefined;
  for (const layer of layers)
    for (const path of layer.paths)
      if ((file === path || file.startsWith(path)) && path.length > (best?.length ?? -1))
        best = { layer, length: path.length };
  return best?.layer;
}

/**
 * The problems, one line each: a file under `under` that no layer holds, and every import that
 * points up or sideways, as `from:line (layer) imports to (layer)[, type-only | lazily]`.
 */
export function layerViolations(
  files: string[],
  edges: ImportEdge[],
  layers: Layer[],
  under: string,
): string[] {
  const problems: string[] = [];
  for (const file of files)
    if (file.startsWith(under) && !layerOf(file, layers)) problems.push(`${file} is in no layer`);
  for (const edge of edges) {
    const from = layerOf(edge.from, layers);
    const to = layerOf(edge.to, layers);
    if (!from || !to || from === to || to.rank < from.rank) continue;
    const how = edge.kind === 'type' ? ', type-only' : edge.kind === 'dynamic' ? ', lazily' : '';
    const where = to.rank === from.rank ? 'a sibling' : 'a higher layer';
    problems.push(`${edge.from}:${edge.line} (${from.name}) imports ${edge.to} (${to.name}): ${where}${how}`);
  }
  return problems;
}
