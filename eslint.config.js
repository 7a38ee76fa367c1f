// Lint: the habits STYLE.md asks for, held by a tool. typescript-eslint because its type-aware rules read what
// a syntax-only linter cannot (a promise nobody awaits, an `as` that changes nothing); Prettier formats
// (.prettierrc.json), so no rule here is about layout. `npm run lint` runs both; npm test and CI run it.
import js from "@eslint/js";
import { defineConfig } from "eslint/config";
import globals from "globals";
import tseslint from "typescript-eslint";

export default defineConfig(
  {
    ignores: [
      "**/node_modules/",
      "**/dist/",
      "**/dist-tsc/",
      "**/dist-firefox/",
      "packages/cli/bundle/",
      "packages/cli/assets/",
      "release/",
      "bench/results/",
      "**/*.d.ts",
      "**/fixtures/",
    ],
  },
  {
    files: ["**/*.ts", "**/*.mjs", "**/*.js"],
    extends: [js.configs.recommended, tseslint.configs.recommended],
    languageOptions: { ecmaVersion: 2024, sourceType: "module", globals: globals.node },
    rules: {
      // `_name` marks what is taken to be left out (a destructured field, a callback's first parameter).
      "@typescript-eslint/no-unused-vars": [
        "error",
        { argsIgnorePattern: "^_", varsIgnorePattern: "^_", caughtErrors: "none", destructuredArrayIgnorePattern: "^_" },
      ],
      // Control characters are matched on purpose: page text is cleaned of them (util/pageText.ts, policy/decoy.ts).
      "no-control-regex": "off",
    },
  },
  {
    // Code that runs in a page: the dashboard's own, and the page-tools example.
    files: ["packages/broker/src/dashboard/client/**/*.js", "examples/page-tools/connect.js"],
    languageOptions: { globals: globals.browser },
  },
  {
    // These classes list invisible code points one by one (variation selectors, joiners) on purpose: each is removed
    // alone, never as part of a combined character, which is what the rule guards against.
    files: ["packages/broker/src/util/pageText.ts", "packages/broker/src/policy/decoy.ts"],
    rules: { "no-misleading-character-class": "off" },
  },
  {
    // Type-aware rules, over every TypeScript file a tsconfig holds (each package's own, and the tests').
    files: ["packages/*/src/**/*.ts", "packages/*/test/**/*.ts", "test/**/*.ts"],
    languageOptions: {
      parserOptions: {
        project: ["packages/*/tsconfig.json", "packages/inpage/test/tsconfig.json", "tsconfig.test.json"],
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      // A promise is awaited, returned, or marked `void` where nobody waits for it on purpose (STYLE.md).
      "@typescript-eslint/no-floating-promises": "error",
      "@typescript-eslint/no-misused-promises": ["error", { checksVoidReturn: { arguments: false, attributes: false } }],
      "@typescript-eslint/await-thenable": "error",
      "@typescript-eslint/no-unnecessary-type-assertion": "error",
      "@typescript-eslint/consistent-type-imports": ["error", { fixStyle: "inline-type-imports" }],
    },
  },
);
