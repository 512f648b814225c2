// The plugin ships no types; scripts/lint-package.ts uses its configs' rule tables only.
declare module 'eslint-plugin-n8n-nodes-base' {
  import type { ESLint, Linter } from 'eslint';
  const plugin: ESLint.Plugin & {
    configs: Record<'community' | 'credentials' | 'nodes' | 'all', { rules: Linter.RulesRecord }>;
  };
  export default plugin;
}
