/**
 * What a route's files are sent, held and named with (docs/daemon.md, "Routing by subfolder"). One
 * place, so the upload (routes.ts), the review rules (outputs/review.ts) and the names from the data
 * (engine/pipeline.ts) cannot read a route differently. Decided per setting (docs/decisions.md,
 * "What a route takes from its watch"):
 *
 * - A setting the route gives replaces the watch's whole: review rules are not merged (a route's
 *   `review: {}` holds nothing, whatever the watch's rules).
 * - Its target (template_id / folder_id) is always its own: every route must give one (loadConfig),
 *   and one given alone is not completed with the watch's other (a route's folder_id is not sent
 *   with the watch's template_id). A route without a target is refused rather than sent with the
 *   watch's template, for the reason a file no route maps is held: never a guessed template.
 * - What is written for a template's fields (`review`, `archive_name`, `result_name`: they name its
 *   fields) follows the template: a route that leaves one out takes the watch's only when it sends
 *   to the watch's own template_id. A route to another template (or to a folder, whose template the
 *   service picks) has its own or none: an invoice's "Supplier is missing" never holds a receipt.
 * - What is not about the template is inherited: `metadata` (where the files come from).
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
  /** Names from the data (null: the defaults, its path in the watched folder and "<name>.doc-<id>"). */
  archive_name: string | undefined;
  result_name: string | undefined;
}

/** Whether the route sends to the template the watch's own settings were written for. */
const sameTemplate = (watch: WatchConfig, route: RouteConfig) =>
  route.template_id !== undefined && route.template_id === watch.template_id;

export function routeSettings(watch: WatchConfig, route: RouteConfig): RouteSettings {
  const forTemplate = sameTemplate(watch, route);
  return {
    name: route.name ?? route.match,
    template_id: route.template_id,
    folder_id: route.folder_id,
    metadata: route.metadata ?? watch.metadata,
    review: route.review ?? (forTemplate ? watch.review : undefined),
    archive_name: route.archive_name ?? (forTemplate ? watch.archive_name : undefined),
    result_name: route.result_name ?? (forTemplate ? watch.result_name : undefined),
  };
}

/** The settings a file of `route` (a route's name, null: none) is held and named with. */
export function settingsOfRoute(
  watch: WatchConfig,
  route: string | null,
): Pick<RouteSettings, 'review' | 'archive_name' | 'result_name'> {
  const own = route === null ? undefined : watch.routes.find((r) => (r.name ?? r.match) === route);
  if (own) return routeSettings(watch, own);
  return { review: watch.review, archive_name: watch.archive_name, result_name: watch.result_name };
}
