// Generates the TypeScript declarations of the WIT world's guest side (`declare module
// 'wasmop:reconciler/cache@0.1.0'` and so on) with jco, the same generator as `jco guest-types`:
//
//   node tools/wit-types.mjs WIT_DIR WORLD OUT_DIR
//
// The jco CLI cannot read WIT here: its bundled preview2-shim (0.26) starts with no filesystem
// preopens, so every path fails with "No such file or directory". This script preopens `/` on
// that shim before calling the same generator.
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const [witDir, world, outDir] = process.argv.slice(2);
if (!witDir || !world || !outDir) {
  console.error('usage: node tools/wit-types.mjs WIT_DIR WORLD OUT_DIR');
  process.exit(2);
}

const transpile = createRequire(import.meta.url).resolve('@bytecodealliance/jco-transpile');
const shim = createRequire(transpile).resolve('@bytecodealliance/preview2-shim/filesystem');
const { _addPreopen } = await import(pathToFileURL(shim).href);
_addPreopen('/', '/');

const { generateGuestTypes } = await import(pathToFileURL(transpile).href);
const out = resolve(outDir);
const files = await generateGuestTypes(resolve(witDir), { worldName: world, outDir: `${out}/` });
await rm(out, { recursive: true, force: true });
for (const [path, bytes] of Object.entries(files)) {
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, bytes);
}
