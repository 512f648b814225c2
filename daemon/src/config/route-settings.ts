/**
 * What a route's files are sent and held with: the route's own settings, and its watch's for every
 * one it leaves out (docs/daemon.md, "Routing by subfolder"). One place, so the upload (routes.ts)
 * and the review rules (outputs/review.ts) cannot read a route differently.
 *
 * - A setting the route gives replaces the watch's whole: review rules are not merged (a route's
 *   `review: {}` holds nothing, whatever the watch's rules).
 * - Its target (template_id / folder_id) is always its own: every route must give one (loadConfig),
 *   and one given alone is not completed with the watch's other (a route's folder_id is not sent
 *   with the watch's template_id). A route without a target is refused rather than sent with the
 *   watch's template, for the reason a file no route maps is held: never a guessed template.
 * - `match` and `name` are what the route is, not settings: a watch has neither.
 */
import type { ReviewSettings, WatchConfig } from './config.ts';

export type RouteConfig = WatchConfig['routes'][number];

export interface RouteSettings {
  /** How status, the page and the state DB name the route. */
  name: string;
  template_id: number | undefined;
  folder_id: number | undefined;
  /** Sent with each upload. */
  metadata: string | undefined;
  /** The review rules of its documents. */
  review: ReviewSettings | undefined;
}

export function routeSettings(watch: WatchConfig, route: RouteConfig): RouteSettings {
  return {
    name: route.name ?? route.match,
    template_id: route.template_id,
    folder_id: route.folder_id,
    metadata: route.metadata ?? watch.metadata,
    review: route.review ?? watch.review,
  };
}
