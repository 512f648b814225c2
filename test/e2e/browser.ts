/**
 * Debian's chromium driven by playwright-core, both installed by scripts/browser-install.sh on first
 * run (chromium with apt-get, playwright-core into the user cache), in a fresh profile removed on close.
 */
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { repo } from './pack.ts';
import { OWNER } from './services.ts';
import { oneTimeInstallsDone } from './shared.ts';
import { timed } from '../support/timing.ts';

/** The little of playwright-core's API the tests use (its types are not in the repo's node_modules). */
export interface Locator {
  textContent(): Promise<string | null>;
  innerText(): Promise<string>;
  allInnerTexts(): Promise<string[]>;
  click(options?: { timeout?: number }): Promise<void>;
  dblclick(options?: { timeout?: number }): Promise<void>;
  fill(value: string): Promise<void>;
  press(key: string): Promise<void>;
  count(): Promise<number>;
  first(): Locator;
  nth(index: number): Locator;
  locator(selector: string): Locator;
  waitFor(options?: {
    state?: 'visible' | 'attached' | 'hidden' | 'detached';
    timeout?: number;
  }): Promise<void>;
}
export interface Page {
  goto(url: string): Promise<unknown>;
  title(): Promise<string>;
  content(): Promise<string>;
  url(): string;
  locator(selector: string): Locator;
  evaluate<T>(fn: string): Promise<T>;
  /** The page's frames, the browser's own among them (the PDF viewer's extension frame). */
  frames(): Array<{ url(): string; evaluate<T>(expression: string): Promise<T> }>;
  waitForTimeout(ms: number): Promise<void>;
  /** The limit of every later wait, click, fill and navigation that gives none of its own. */
  setDefaultTimeout(ms: number): void;
  waitForURL(url: (url: URL) => boolean, options?: { timeout?: number }): Promise<void>;
  screenshot(options: { path: string; fullPage?: boolean }): Promise<unknown>;
  on(event: 'console', listener: (message: { text(): string }) => void): void;
  close(): Promise<void>;
}
export interface BrowserContext {
  newPage(): Promise<Page>;
  close(): Promise<void>;
}
/** A browser of separate contexts (each its own cookies: two n8n on 127.0.0.1 share a cookie jar otherwise). */
export interface Browser {
  newContext(viewport?: { width: number; height: number }): Promise<BrowserContext>;
  close(): Promise<void>;
}
interface Chromium {
  launch(options: { executablePath: string; headless: boolean; args: string[]; timeout?: number }): Promise<{
    newContext(options: { viewport?: { width: number; height: number } }): Promise<BrowserContext>;
    close(): Promise<void>;
  }>;
  launchPersistentContext(
    userDataDir: string,
    options: {
      executablePath: string;
      headless: boolean;
      args: string[];
      timeout?: number;
      viewport?: { width: number; height: number };
    },
  ): Promise<BrowserContext>;
}

const CHROMIUM = '/usr/bin/chromium';
const FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Signs in as the test n8n's owner on the sign-in form `page` shows, and waits until it has left it. */
export async function signInAsOwner(page: Page): Promise<void> {
  await page.locator('input[type="email"]').fill(OWNER.email);
  await page.locator('input[type="password"]').fill(OWNER.password);
  await page.locator('input[type="password"]').press('Enter');
  await page.waitForURL((url) => !url.pathname.startsWith('/signin'));
}

async function chromiumDriver(): Promise<Chromium> {
  // The e2e global set-up installs them once for the run; then the script below only finds them.
  await oneTimeInstallsDone();
  // Installs Debian's chromium (apt-get) and playwright-core (user cache) when missing, saying so.
  const driver = execFileSync('bash', [join(repo, 'scripts/browser-install.sh')], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  }).trim();
  const { chromium } = (await import(pathToFileURL(join(driver, 'index.mjs')).href)) as {
    chromium: Chromium;
  };
  return chromium;
}

/**
 * One Chromium whose contexts are separate browsing sessions (playwright's incognito-like contexts,
 * no profile on disk): for a file that drives two web apps at once that must not share cookies.
 */
export async function launchChromiumBrowser(): Promise<Browser> {
  const chromium = await chromiumDriver();
  const browser = await timed('Chromium launch', () =>
    chromium.launch({ executablePath: CHROMIUM, headless: true, args: FLAGS, timeout: 120_000 }),
  );
  return {
    async newContext(viewport) {
      const context = await browser.newContext(viewport ? { viewport } : {});
      return { newPage: () => context.newPage(), close: () => context.close() };
    },
    close: () => browser.close(),
  };
}

export async function launchChromium(viewport?: { width: number; height: number }): Promise<BrowserContext> {
  const chromium = await chromiumDriver();
  const profile = await mkdtemp(join(tmpdir(), 'docex-chromium-'));
  try {
    const browser = await timed('Chromium launch', () =>
      chromium.launchPersistentContext(profile, {
        executablePath: CHROMIUM,
        headless: true,
        args: FLAGS,
        timeout: 120_000,
        ...(viewport ? { viewport } : {}),
      }),
    );
    return {
      newPage: () => browser.newPage(),
      async close() {
        await browser.close();
        await rm(profile, { recursive: true, force: true });
      },
    };
  } catch (error) {
    await rm(profile, { recursive: true, force: true });
    throw error;
  }
}
