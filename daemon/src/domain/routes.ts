/**
 * Routing by subfolder: which template or folder (and metadata) a file is sent with, from the
 * subfolder it was dropped into. First match wins; a file no route maps is held, never sent with
 * a guessed template. A route sends what it sets, and its watch's metadata when it sets none
 * (config/route-settings.ts).
 */
import { globMatcher, type WatchConfig } from '../config/config.ts';
import { routeSettings } from '../config/route-settings.ts';

/** Where a file is sent: `route` names the route (null: the watch's own template or folder). */
export interface Routed {
  route: string | null;
  template_id?: number | undefined;
  folder_id?: number | undefined;
  metadata?: string | undefined;
}
export type Routing = Routed | { held: string };

type Compiled = Array<{ name: string; matches: (unixRel: string) => boolean; route: Routed }>;
const compiledOf = new WeakMap<WatchConfig, Compiled>();

function compiled(watch: WatchConfig): Compiled {
  let c = compiledOf.get(watch);
  if (!c) {
    c = watch.routes.map((r) => {
      const { name, template_id, folder_id, metadata } = routeSettings(watch, r);
      return {
        name,
        matches: globMatcher(r.match),
        route: { route: name, template_id, folder_id, metadata },
      };
    });
    compiledOf.set(watch, c);
  }
  return c;
}

/** The subfolder and each of its parents, outermost first: "A/B/x.pdf" → ["A", "A/B"]. */
function folders(rel: string): string[] {
  const parts = rel.split(/[\\/]/).slice(0, -1);
  return parts.map((_, i) => parts.slice(0, i + 1).join('/'));
}

/** How the file at `rel` (relative to the watched folder) is sent, or why it is held. */
export function routeFor(watch: WatchConfig, rel: string): Routing {
  const own: Routed = {
    route: null,
    template_id: watch.template_id,
    folder_id: watch.folder_id,
    metadata: watch.metadata,
  };
  const routes = compiled(watch);
  if (routes.length === 0) return own;
  const dirs = folders(rel);
  for (const r of routes) if (dirs.some((d) => r.matches(d))) return r.route;
  if (dirs.length === 0) {
    if (watch.template_id !== undefined || watch.folder_id !== undefined) return own;
    return {
      held: 'not in a routed subfolder, and the watch has no template_id or folder_id of its own: move it into a mapped subfolder',
    };
  }
  return {
    held: `subfolder "${dirs.at(-1)}" is mapped by no route (routes: ${routes
      .map((r) => r.name)
      .join(', ')}); add a route for it to the config, or move the file into a mapped subfolder`,
  };
}
