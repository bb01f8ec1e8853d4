// Bundles TypeScript or JavaScript with esbuild into single ES modules:
//
//   node tools/bundle.mjs component PLUGIN_DIR OUT_FILE
//       the plugin's component entry: its src/index.(ts|js) default export wired to the
//       component's exports; imports of the WIT interfaces stay external for componentize-js.
//   node tools/bundle.mjs tests OUT_DIR TEST_FILE...
//       test files for `node --test`; the WIT interfaces resolve to the SDK's fake host.
import { existsSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import * as esbuild from 'esbuild';

const sdk = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const WIT_IMPORT = /^wasmop:reconciler\//;

const common = {
  bundle: true,
  format: 'esm',
  target: 'es2022',
  logLevel: 'warning',
  legalComments: 'none',
};

function entryOf(pluginDir) {
  const entry = ['src/index.ts', 'src/index.js'].map((f) => join(pluginDir, f)).find(existsSync);
  if (!entry) {
    throw new Error(`${pluginDir} has no src/index.ts or src/index.js`);
  }
  return entry;
}

async function component(pluginDir, outFile) {
  const dir = resolve(pluginDir);
  const entry = entryOf(dir);
  const contents = [
    `import reconciler from ${JSON.stringify(entry)};`,
    `import { componentExports } from ${JSON.stringify(join(sdk, 'src/component.ts'))};`,
    'export const { describe, reconcile, map, webhooks } = componentExports(reconciler);',
  ].join('\n');
  await esbuild.build({
    ...common,
    stdin: { contents, resolveDir: dir, sourcefile: 'component-entry.js', loader: 'js' },
    outfile: outFile,
    platform: 'neutral',
    external: ['wasmop:reconciler/*'],
  });
}

/** Resolves every WIT interface import to the fake host, for tests under Node. */
const fakeHost = {
  name: 'wasmop-fake-host',
  setup(build) {
    build.onResolve({ filter: WIT_IMPORT }, () => ({ path: join(sdk, 'src/testing/wit.ts') }));
  },
};

/**
 * Gives an ES module bundle a `require`, with which the CommonJS packages bundled into it load
 * Node's built-in modules.
 */
const nodeRequire = "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);";

async function tests(outDir, files) {
  await esbuild.build({
    ...common,
    entryPoints: files.map((file) => ({ in: resolve(file), out: basename(file, '.ts') })),
    outdir: outDir,
    outExtension: { '.js': '.mjs' },
    platform: 'node',
    external: ['node:*'],
    banner: { js: nodeRequire },
    plugins: [fakeHost],
  });
}

const [mode, ...args] = process.argv.slice(2);
if (mode === 'component' && args.length === 2) {
  await component(args[0], args[1]);
} else if (mode === 'tests' && args.length >= 2) {
  await tests(args[0], args.slice(1));
} else {
  console.error('usage: node tools/bundle.mjs component PLUGIN_DIR OUT_FILE | tests OUT_DIR TEST_FILE...');
  process.exit(2);
}
