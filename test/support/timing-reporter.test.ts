/** The timing report's install lines (test/support/timing-reporter.ts): true figures for a first run. */
import { describe, expect, it } from 'vitest';
import { installLines } from './timing-reporter.ts';

const AT = Date.UTC(2026, 10, 28, 15, 44) / 1000;
const installs = [
  { what: 'n8n 2.41.1', seconds: 352, at: AT - 400 },
  { what: 'n8n 2.40.7', seconds: 352, at: AT - 400 },
  { what: 'chromium', seconds: 43, at: AT - 600 },
];

describe('the install lines of the timing report', () => {
  it('a first run measured here is what it says a first run takes, not the installs added up', () => {
    const lines = installLines({
      installs,
      thisRun: [],
      firstRun: { seconds: 704, at: AT, installSeconds: 747 },
      wallMs: 339_000,
    });
    expect(lines).toEqual([
      '  one-time installs in this run: none (everything was cached)',
      '  a first run on a new machine takes about 704 s: measured here on 2026-11-28, from `npm test` to ' +
        'this report, with its one-time installs (747 s of their own, beside each other and the tests); this run 339 s',
    ]);
  });

  it('without a measured first run, an upper bound: this run plus every install one after another', () => {
    const lines = installLines({ installs, thisRun: [installs[2]!], firstRun: undefined, wallMs: 400_000 });
    expect(lines[0]).toBe('  one-time installs in this run: chromium 43 s (43 s)');
    expect(lines[1]).toBe(
      '  a first run on a new machine takes at most about 1104 s: this run plus the one-time installs last ' +
        'measured here, one after another (n8n 2.41.1 352 s, n8n 2.40.7 352 s, chromium 43 s)',
    );
  });

  it('nothing measured yet', () => {
    expect(installLines({ installs: [], thisRun: [], firstRun: undefined, wallMs: 1000 })[1]).toBe(
      '  a first run on a new machine: no one-time install was measured on this machine yet',
    );
  });
});
