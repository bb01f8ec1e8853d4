/**
 * Fixture files under `node --test`, judged by the host's own runner: the plugin's project is
 * built into a component with `wasmop build` (once per process) and `wasmop test --format json`
 * runs the fixtures against it — a fresh instance per reconcile, the host's limits and clock, as in
 * a cluster. {@link testFixtures} declares a test whose subtests are the fixtures, each failing
 * with the differences `wasmop test` words; {@link runFixtures} returns the verdicts. The `wasmop`
 * run is `$WASMOP`, else the one on PATH.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { test } from 'node:test';

/** One fixture's verdict, as `wasmop test` reported it. */
export interface FixtureResult {
  /** The fixture's file. */
  file: string;
  /** The fixture's name, or its file's when it has none. */
  name: string;
  /** Whether the plugin did what the fixture expects. */
  passed: boolean;
  /** Each difference from the fixture (or what is wrong with a file that is no fixture). */
  differences: string[];
}

/** Where the plugin is. */
export interface FixtureOptions {
  /** The plugin's project folder, which `wasmop build` builds; the working directory by default. */
  plugin?: string;
}

const built = new Map<string, string>();

/** The `wasmop` to run: `$WASMOP`, else the one on PATH. */
function wasmop(): string {
  return process.env.WASMOP || 'wasmop';
}

/** Runs `wasmop` with `args`; throws naming what it was `doing` when it cannot start or fails. */
function run(args: string[], doing: string): { stdout: string; stderr: string; status: number } {
  const done = spawnSync(wasmop(), args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  if (done.error) {
    throw new Error(`${doing}: cannot run ${wasmop()} (${done.error.message}); set WASMOP to its path or put wasmop on PATH`);
  }
  if (done.status !== 0 && done.status !== 1) {
    throw new Error(`${doing} failed (exit status ${done.status}):\n${done.stderr.trim()}`);
  }
  return { stdout: done.stdout, stderr: done.stderr, status: done.status };
}

/** The component of the plugin in `folder`, built the first time it is asked for in this process. */
export function buildPlugin(folder = '.'): string {
  const dir = resolve(folder);
  let component = built.get(dir);
  if (component === undefined) {
    const scratch = mkdtempSync(join(tmpdir(), 'wasmop-fixtures-'));
    process.once('exit', () => rmSync(scratch, { recursive: true, force: true }));
    component = join(scratch, `${basename(dir)}.wasm`);
    const doing = `building ${dir}`;
    const { stderr, status } = run(['build', '--language', 'js', '-o', component, dir], doing);
    if (status !== 0) {
      throw new Error(`${doing} failed:\n${stderr.trim()}`);
    }
    built.set(dir, component);
  }
  return component;
}

/**
 * Runs the fixtures `paths` name (files, and each directory's fixture files) against the plugin,
 * built; a result per fixture, in `wasmop test`'s order.
 */
export function runFixtures(paths: string | string[], options: FixtureOptions = {}): FixtureResult[] {
  const list = typeof paths === 'string' ? [paths] : paths;
  const component = buildPlugin(options.plugin);
  const doing = `running the fixtures in ${list.join(', ')}`;
  const { stdout, stderr } = run(['test', '--format', 'json', component, ...list], doing);
  const reports = stdout
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
  if (!reports.some((report) => 'failed' in report)) {
    throw new Error(`${doing}: wasmop test could not run them:\n${stderr.trim()}`);
  }
  return reports
    .filter((report) => 'file' in report)
    .map((report) => ({
      file: report.file as string,
      name: (report.name as string | null) ?? (report.file as string),
      passed: report.passed as boolean,
      differences: report.differences as string[],
    }));
}

/** `ok` or `FAIL` with the fixture's name and file, then each difference on its own lines, as `wasmop test` prints it. */
export function report({ file, name, passed, differences }: FixtureResult): string {
  const lines = differences.flatMap((difference) => difference.split('\n')).map((line) => `        ${line}`);
  return [`${passed ? 'ok  ' : 'FAIL'}  ${name} (${file})`, ...lines].join('\n');
}

/** Declares a `node:test` test running the fixtures `paths` name, each fixture a subtest. */
export function testFixtures(paths: string | string[], options: FixtureOptions = {}): void {
  const list = typeof paths === 'string' ? [paths] : paths;
  test(`fixtures in ${list.join(', ')}`, async (t) => {
    for (const result of runFixtures(list, options)) {
      await t.test(result.name === result.file ? result.file : `${result.name} (${result.file})`, () => {
        assert.ok(result.passed, report(result));
      });
    }
  });
}
