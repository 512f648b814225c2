// typescript-eslint for all code; for nodes/ and credentials/ also the rules n8n's community-package
// scanner applies (@n8n/eslint-plugin-community-nodes recommended, eslint-plugin-n8n-nodes-base's
// community, credentials and nodes sets). scripts/lint-package.ts runs them on the packed tarball.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import { n8nCommunityNodesPlugin } from '@n8n/eslint-plugin-community-nodes';
import n8nNodesBase from 'eslint-plugin-n8n-nodes-base';
import { builtinModules } from 'node:module';
import { dirname, resolve } from 'node:path';

/** Node's built-in modules, with and without the node: prefix. */
const nodeBuiltins = ['node:*', ...builtinModules];
/** A relative import that climbs into shared/ instead of going through the package's exports. */
const intoSharedByPath = {
  regex: '^\\.{1,2}/(.*/)?shared(/|$)',
  message: "import '@docex/shared' or '@docex/shared/node', not its files",
};

/**
 * docex-sync's whole config (`Config`, and `ConfigSchema` and `loadConfig`, which give it) is held by
 * the wiring only; every other daemon module imports the slice it reads from config/config.ts
 * (docs/architecture.md, "The daemon package"). Paths are resolved, so `./config.ts` in common/
 * counts and config/mail.ts does not; `import * as` and `import('...').Config` count too.
 */
const CONFIG_MODULE = resolve(import.meta.dirname, 'daemon/src/config/config.ts');
const WHOLE_CONFIG = new Set(['Config', 'ConfigSchema', 'loadConfig']);
const wholeConfigRule = {
  meta: {
    type: 'problem',
    schema: [],
    messages: {
      named:
        "'{{name}}' is the whole docex-sync config: only app/daemon.ts, app/run.ts and commands/ hold it; give this module its slice (WatchConfig, ConfigSlice<'watch' | ...>, ... from config/config.ts)",
      namespace:
        'a namespace of config/config.ts reaches the whole docex-sync config: import the slice types by name (WatchConfig, ConfigSlice<...>)',
    },
  },
  create(context) {
    const here = dirname(context.filename);
    const isConfigModule = (source) =>
      typeof source === 'string' &&
      source.startsWith('.') &&
      resolve(here, source).replace(/\.[cm]?[jt]s$/, '') === CONFIG_MODULE.replace(/\.ts$/, '');
    const named = (node, name) => {
      if (WHOLE_CONFIG.has(name)) context.report({ node, messageId: 'named', data: { name } });
    };
    const leftmost = (name) => (name.type === 'TSQualifiedName' ? leftmost(name.left) : name.name);
    return {
      ImportDeclaration(node) {
        if (!isConfigModule(node.source.value)) return;
        for (const s of node.specifiers)
          if (s.type === 'ImportNamespaceSpecifier') context.report({ node: s, messageId: 'namespace' });
          else if (s.type === 'ImportSpecifier') named(s, s.imported.name ?? s.imported.value);
      },
      ExportNamedDeclaration(node) {
        if (!node.source || !isConfigModule(node.source.value)) return;
        for (const s of node.specifiers) named(s, s.local.name ?? s.local.value);
      },
      ExportAllDeclaration(node) {
        if (isConfigModule(node.source.value)) context.report({ node, messageId: 'namespace' });
      },
      TSImportType(node) {
        if (!isConfigModule(node.source?.value)) return;
        if (!node.qualifier) context.report({ node, messageId: 'namespace' });
        else named(node, leftmost(node.qualifier));
      },
    };
  },
};

const nodeGlobals = Object.fromEntries(
  [
    'process',
    'console',
    'Buffer',
    'URL',
    'URLSearchParams',
    'setTimeout',
    'clearTimeout',
    'setInterval',
    'clearInterval',
    'fetch',
    'TextEncoder',
    'TextDecoder',
    'AbortController',
    'AbortSignal',
  ].map((g) => [g, 'readonly']),
);

export default tseslint.config(
  { ignores: ['node_modules/', 'dist/', 'daemon/dist/', 'cli/dist/', 'coverage/', '**/*.d.ts'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: nodeGlobals },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-empty-object-type': 'off',
      'no-control-regex': 'off',
    },
  },
  {
    // Outside shared/ its package exports are the only way in.
    files: ['**/*.ts'],
    ignores: ['shared/**'],
    rules: { 'no-restricted-imports': ['error', { patterns: [intoSharedByPath] }] },
  },
  {
    // The daemon's SQL lives in its store: no other module opens the DB or prepares a statement.
    files: ['daemon/src/**/*.ts'],
    ignores: ['daemon/src/store/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [{ name: 'better-sqlite3', message: 'SQL belongs in daemon/src/store/' }],
          patterns: [intoSharedByPath],
        },
      ],
      'no-restricted-syntax': [
        'error',
        {
          // better-sqlite3's statement, pragma and transaction calls (RegExp's exec is left alone).
          selector: 'CallExpression[callee.property.name=/^(prepare|pragma|transaction)$/]',
          message: 'SQL belongs in daemon/src/store/: add a method to the store',
        },
      ],
    },
  },
  {
    // Each daemon module gets its slice of the config; only the wiring holds the whole of it.
    files: ['daemon/src/**/*.ts'],
    ignores: [
      'daemon/src/config/config.ts',
      'daemon/src/app/daemon.ts',
      'daemon/src/app/run.ts',
      'daemon/src/commands/**',
    ],
    plugins: { docex: { rules: { 'whole-config': wholeConfigRule } } },
    rules: { 'docex/whole-config': 'error' },
  },
  {
    // Tests read JSON answers loosely.
    files: ['test/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    // The pure core: no I/O, timers or process (the n8n package compiles it in).
    files: ['shared/src/core/**/*.ts'],
    rules: {
      'no-restricted-globals': [
        'error',
        'process',
        'setTimeout',
        'setInterval',
        'setImmediate',
        'Buffer',
        'require',
      ],
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: [...nodeBuiltins, 'got', 'p-queue', 'pino', '@docex/shared/node', '**/node/**'],
              message: 'the core is pure: I/O belongs in a transport',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['nodes/**/*.ts', 'credentials/**/*.ts'],
    plugins: { '@n8n/community-nodes': n8nCommunityNodesPlugin, 'n8n-nodes-base': n8nNodesBase },
    linterOptions: { noInlineConfig: true },
    rules: {
      ...n8nCommunityNodesPlugin.configs.recommended.rules,
      ...n8nNodesBase.configs.community.rules,
      ...n8nNodesBase.configs.credentials.rules,
      ...n8nNodesBase.configs.nodes.rules,
      // These two older rules want the string 'main'; the community plugin (newer) wants NodeConnectionTypes.Main.
      'n8n-nodes-base/node-class-description-inputs-wrong-regular-node': 'off',
      'n8n-nodes-base/node-class-description-outputs-wrong': 'off',
      // Together these allow only a camelCase slug, which n8n turns into a docs.n8n.io link: right for
      // n8n's own credentials, a broken link for a community one, whose documentationUrl is a full URL.
      'n8n-nodes-base/cred-class-field-documentation-url-missing': 'off',
      'n8n-nodes-base/cred-class-field-documentation-url-miscased': 'off',
      // The n8n package compiles in only the pure core: Node code cannot get in by construction.
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['@docex/shared/*'],
              message: "nodes and credentials use only the pure core, '@docex/shared'",
            },
            { group: nodeBuiltins, message: 'no Node built-ins in n8n node code' },
            intoSharedByPath,
          ],
        },
      ],
    },
  },
);
