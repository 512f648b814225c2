/**
 * Dependencies loaded on first use, synchronously. A command that reads no YAML and checks no cron
 * expression (a download, an upload, `folders list`) does not pay for them: both cost resident memory
 * at import (measured in docs/client.md, "Memory").
 */
import { createRequire } from 'node:module';
import type * as Yaml from 'yaml';
import type * as NodeCron from 'node-cron';

const load = createRequire(import.meta.url);

export const yaml = (): typeof Yaml => load('yaml') as typeof Yaml;
export const nodeCron = (): typeof NodeCron => load('node-cron') as typeof NodeCron;
