/**
 * What a route of a watch sends, applies and names (config/route-settings.ts): one it sets replaces
 * the watch's whole (review rules are not merged), its target (template_id / folder_id) is its own,
 * what is written for a template's fields (review, archive_name, result_name) comes from the watch
 * only for a route to the watch's own template, and the rest (metadata) from the watch. One case per key of the route schema, checked
 * through what the pipeline uses (routeFor, reviewRulesFor): a key added to the schema fails the
 * first test until it has a case here saying whether, and how, it is inherited.
 * End to end against the emulator (the metadata stored with each document): routes.test.ts.
 */
import { describe, expect, it } from 'vitest';
import type { z } from 'zod/v4';
import { Route, type WatchConfig } from '../../../daemon/src/config/config.ts';
import { routeSettings, settingsOfRoute } from '../../../daemon/src/config/route-settings.ts';
import { routeFor } from '../../../daemon/src/domain/routes.ts';
import { reviewRulesFor } from '../../../daemon/src/outputs/review.ts';
import { watchIn } from '../helpers.ts';

type RouteKey = keyof z.input<typeof Route>;

const WATCH_REVIEW = { min_confidence: 0.8, required_fields: ['Total'] };

/** A routed watch with every setting a route can inherit, and `routes` below it. */
function watchWith(routes: Array<Record<string, unknown>>, own: Record<string, unknown> = {}): WatchConfig {
  return watchIn('/srv/base', '/srv/share', {
    recursive: true,
    template_id: 1,
    metadata: '{"source":"share"}',
    review: WATCH_REVIEW,
    review_dir: '/srv/review',
    archive_name: '{yyyy}/{field:Supplier}/{name}{ext}',
    result_name: '{field:Supplier}/{field:Invoice number}',
    routes,
    ...own,
  });
}

/** How a file in `folder` is sent (routeFor, as the pipeline asks). */
function sent(watch: WatchConfig, folder: string) {
  const routing = routeFor(watch, `${folder}/x.pdf`);
  if ('held' in routing) throw new Error(`held: ${routing.held}`);
  return routing;
}

const CASES: Record<RouteKey, { says: string; check: () => void }> = {
  match: {
    says: "the route's own: the subfolder it maps (a watch maps none)",
    check() {
      const watch = watchWith([{ match: 'Supplier A', template_id: 2 }]);
      expect(sent(watch, 'Supplier A').route).toBe('Supplier A');
      expect(sent(watch, 'Supplier A/2026').route).toBe('Supplier A');
    },
  },
  name: {
    says: "the route's own, else its match (a watch has none)",
    check() {
      const watch = watchWith([
        { match: 'Supplier A', template_id: 2 },
        { match: 'Branch-*', name: 'branches', template_id: 3 },
      ]);
      expect(sent(watch, 'Supplier A').route).toBe('Supplier A');
      expect(sent(watch, 'Branch-North').route).toBe('branches');
      expect(routeSettings(watch, watch.routes[1]!).name).toBe('branches');
    },
  },
  template_id: {
    says: "the route's own target, never the watch's (each route gives template_id or folder_id)",
    check() {
      const watch = watchWith([{ match: 'Supplier A', template_id: 2 }], { folder_id: 9 });
      expect(sent(watch, 'Supplier A')).toMatchObject({ template_id: 2, folder_id: undefined });
    },
  },
  folder_id: {
    says: "the route's own target: a route with folder_id alone is not sent with the watch's template_id",
    check() {
      const watch = watchWith([{ match: 'Branch-*', folder_id: 3 }]);
      expect(sent(watch, 'Branch-North')).toMatchObject({ template_id: undefined, folder_id: 3 });
    },
  },
  metadata: {
    says: "the watch's when the route sets none; the route's own replaces it",
    check() {
      const watch = watchWith([
        { match: 'Supplier A', template_id: 2, metadata: '{"supplier":"A"}' },
        { match: 'Supplier B', template_id: 3 },
      ]);
      expect(sent(watch, 'Supplier A').metadata).toBe('{"supplier":"A"}');
      expect(sent(watch, 'Supplier B').metadata).toBe('{"source":"share"}');
      const bare = watchWith([{ match: 'Supplier B', template_id: 3 }], { metadata: undefined });
      expect(sent(bare, 'Supplier B').metadata).toBeUndefined();
    },
  },
  review: {
    says: "the route's own replace the watch's whole (`{}`: none); left out, the watch's only for a route to the watch's template",
    check() {
      const watch = watchWith([
        { match: 'Supplier A', template_id: 2, review: { required_fields: ['PO number'] } },
        { match: 'Receipts', template_id: 3 },
        { match: 'Branch-*', folder_id: 3 },
        { match: 'ACME', template_id: 1 },
        { match: 'Petty cash', template_id: 1, review: {} },
      ]);
      const rules = (folder: string) => reviewRulesFor(watch, sent(watch, folder).route);
      // Replaced, not merged: the watch's min_confidence and required Total do not apply.
      expect(rules('Supplier A')).toEqual({ requiredFields: ['PO number'] });
      // Another template (or a folder, whose template the service picks): the watch's rules,
      // written for template 1's fields, do not hold its documents.
      expect(rules('Receipts')).toBeUndefined();
      expect(rules('Branch-North')).toBeUndefined();
      // The watch's own template: its rules were written for these documents.
      expect(rules('ACME')).toEqual({ minConfidence: 0.8, requiredFields: ['Total'] });
      expect(rules('Petty cash')).toBeUndefined();
      expect(routeSettings(watch, watch.routes[3]!).review).toEqual(watch.review);
    },
  },
  archive_name: {
    says: "the route's own; left out, the watch's only for a route to the watch's template (it names the template's fields)",
    check() {
      const watch = watchWith([
        { match: 'Receipts', template_id: 3, archive_name: 'receipts/{yyyy}/{name}{ext}' },
        { match: 'Scans', template_id: 3 },
        { match: 'ACME', template_id: 1 },
      ]);
      const named = (folder: string) => settingsOfRoute(watch, sent(watch, folder).route).archive_name;
      expect(named('Receipts')).toBe('receipts/{yyyy}/{name}{ext}');
      expect(named('Scans')).toBeUndefined();
      expect(named('ACME')).toBe('{yyyy}/{field:Supplier}/{name}{ext}');
      expect(settingsOfRoute(watch, null).archive_name).toBe('{yyyy}/{field:Supplier}/{name}{ext}');
    },
  },
  result_name: {
    says: "the route's own; left out, the watch's only for a route to the watch's template (it names the template's fields)",
    check() {
      const watch = watchWith([
        { match: 'Receipts', template_id: 3, result_name: 'receipts/{name}' },
        { match: 'Scans', folder_id: 3 },
        { match: 'ACME', template_id: 1, folder_id: 4 },
      ]);
      const named = (folder: string) => settingsOfRoute(watch, sent(watch, folder).route).result_name;
      expect(named('Receipts')).toBe('receipts/{name}');
      expect(named('Scans')).toBeUndefined();
      expect(named('ACME')).toBe('{field:Supplier}/{field:Invoice number}');
    },
  },
};

describe('what a route takes from its watch, setting by setting', () => {
  it('every key a route can set has a case here (a new key fails until it has one)', () => {
    expect(Object.keys(CASES).sort()).toEqual(Object.keys(Route.shape).sort());
  });
  for (const [key, { says, check }] of Object.entries(CASES)) it(`${key}: ${says}`, check);
});
