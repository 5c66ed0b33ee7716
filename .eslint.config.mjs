import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import globals from 'globals';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'demo/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  { languageOptions: { globals: { ...globals.node } } },
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-restricted-properties': ['error',
        { object: 'process', property: 'exit', message: 'Only src/main.ts exits.' }],
    },
  },
  { files: ['src/main.ts', 'test/**'], rules: { 'no-restricted-properties': 'off' } },
  {
    // Capability folders depend downwards: cli/ calls into them, never the reverse.
    files: ['src/**/*.ts'],
    ignores: ['src/cli/**', 'src/main.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': ['error', {
        patterns: [{ group: ['**/cli/*'], message: 'A capability folder never imports cli/: move the CLI side into src/cli/.' }],
      }],
    },
  },
);
