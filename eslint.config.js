// ESLint for rq (`npm run lint`): typescript-eslint's recommended rules with type
// information over the TypeScript of src/, bench/ and test/ (one program, from
// tsconfig.test.json), plus the rules that catch what the house rules forbid: `any`,
// unused variables and imports, `@ts-ignore`, promises left floating, stale
// eslint-disable comments. The layer rules (who may import whom, no cycles) are
// dependency-cruiser's: .dependency-cruiser.cjs.
import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import tseslint from 'typescript-eslint';

/** The few globals the dashboard's scripts and the test fixtures use (no `globals` package). */
const browser = Object.fromEntries(
  ['window', 'document', 'fetch', 'DOMParser', 'CustomEvent', 'EventSource', 'getComputedStyle'].map((n) => [n, 'readonly']),
);
const node = Object.fromEntries(['process', 'setTimeout', 'clearTimeout', 'console'].map((n) => [n, 'readonly']));

export default defineConfig(
  { ignores: ['dist/', 'node_modules/', 'test-results/'] },
  { linterOptions: { reportUnusedDisableDirectives: 'error' } },
  {
    files: ['**/*.ts'],
    extends: [js.configs.recommended, ...tseslint.configs.recommendedTypeChecked],
    languageOptions: {
      parserOptions: { project: './tsconfig.test.json', tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/ban-ts-comment': 'error',
      '@typescript-eslint/no-floating-promises': 'error',
      // A variable that a function reads before its one assignment (an entry file's `lock`, set once taken) stays `let`.
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
      // `_` names a binding kept on purpose: an express error handler's 4th argument, the
      // field a rest pattern leaves out.
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', caughtErrorsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_', ignoreRestSiblings: true },
      ],
      // Command handlers and callbacks are async to fit a Promise-returning table or
      // interface; an async function with no await in it is not a bug here.
      '@typescript-eslint/require-await': 'off',
      // rq matches control characters on purpose (one-line reasons, ANSI escapes).
      'no-control-regex': 'off',
      // The house rule is "no non-null `!` where a check fits": `!` after an index that the
      // code has just bounded is fine, and telling the two apart is a reviewer's call.
      '@typescript-eslint/no-non-null-assertion': 'off',
    },
  },
  {
    // Tests read JSON bodies and RPC replies (typed `any` by JSON.parse) and let vitest's
    // expect check them; following each `any` with a cast would add noise, not safety.
    files: ['test/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
    },
  },
  {
    files: ['src/web/public/js/*.js'],
    extends: [js.configs.recommended],
    languageOptions: { sourceType: 'script', globals: browser },
  },
  {
    files: ['**/*.{cjs,mjs}', 'eslint.config.js'],
    extends: [js.configs.recommended],
    languageOptions: { globals: node },
  },
  { files: ['**/*.cjs'], languageOptions: { sourceType: 'commonjs', globals: { __dirname: 'readonly' } } },
);
