/**
 * The contract suite's server: DOCEX_BASE_URL + DOCEX_API_KEY (+ DOCEX_API_KEY_B for company
 * scoping) when set, otherwise the emulator on a free loopback port, stopped afterwards.
 */
import type { TestProject } from 'vitest/node';
import { startEmulator } from '../../emulator/index.ts';

export interface ContractTarget {
  baseUrl: string;
  apiKey: string;
  /** A key of a second company, or null (company-scoping tests are then skipped). */
  apiKeyB: string | null;
  live: boolean;
}

declare module 'vitest' {
  export interface ProvidedContext {
    contractTarget: ContractTarget;
  }
}

export default async function setup(project: TestProject) {
  const { DOCEX_BASE_URL: baseUrl, DOCEX_API_KEY: apiKey, DOCEX_API_KEY_B: apiKeyB } = process.env;
  if (baseUrl) {
    if (!apiKey)
      throw new Error('DOCEX_BASE_URL is set but DOCEX_API_KEY is not: the contract suite needs both');
    if (!apiKeyB)
      console.warn(
        'contract suite: DOCEX_API_KEY_B (a key of a second company) is not set: the company-scoping test is skipped',
      );
    project.provide('contractTarget', { baseUrl, apiKey, apiKeyB: apiKeyB || null, live: true });
    return;
  }
  const emulator = await startEmulator({ port: 0, taskDelayMs: 50 });
  project.provide('contractTarget', {
    baseUrl: emulator.url,
    apiKey: emulator.keys[0]!,
    apiKeyB: emulator.keys[1] ?? null,
    live: false,
  });
  return async () => emulator.stop();
}
