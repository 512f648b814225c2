/**
 * What a route of a watch sends and applies (config/route-settings.ts): every setting it leaves out
 * comes from its watch, one it sets replaces the watch's whole (review rules are not merged), and
 * its target (template_id / folder_id) is its own. One case per key of the route schema, checked
 * through what the pipeline uses (routeFor, reviewRulesFor): a key added to the schema fails the
 * first test until it has a case here saying whether, and how, it is inherited.
 * End to end against the emulator (the metadata stored with each document): routes.test.ts.
 */
import { describe, expect, it } from 'vitest';
import type { z } from 'zod/v4';
import { Route, type WatchConfig } from '../../../daemon/src/config/config.ts';
import { routeSettings } from '../../../daemon/src/config/route-settings.ts';
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
    says: "the watch's rules when the route sets none; the route's own replace them whole (`{}`: none)",
    check() {
      const watch = watchWith([
        { match: 'Supplier A', template_id: 2, review: { required_fields: ['PO number'] } },
        { match: 'Supplier B', template_id: 3 },
        { match: 'Petty cash', template_id: 4, review: {} },
      ]);
      const rules = (folder: string) => reviewRulesFor(watch, sent(watch, folder).route);
      // Replaced, not merged: the watch's min_confidence and required Total do not apply.
      expect(rules('Supplier A')).toEqual({ requiredFields: ['PO number'] });
      expect(rules('Supplier B')).toEqual({ minConfidence: 0.8, requiredFields: ['Total'] });
      expect(rules('Petty cash')).toBeUndefined();
      expect(routeSettings(watch, watch.routes[1]!).review).toEqual(watch.review);
    },
  },
};

describe('a route takes from its watch every setting it does not set itself', () => {
  it('every key a route can set has a case here (a new key fails until it has one)', () => {
    expect(Object.keys(CASES).sort()).toEqual(Object.keys(Route.shape).sort());
  });
  for (const [key, { says, check }] of Object.entries(CASES)) it(`${key}: ${says}`, check);
});
