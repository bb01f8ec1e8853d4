import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { after, test } from 'node:test';

import { report, runFixtures } from './fixtures.ts';

const webapp = { plugin: '../../plugins/webapp/js' };
const scratch = mkdtempSync(join(tmpdir(), 'fixtures-test-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

function fixture(name: string, edit: (text: string) => string = (text) => text): string {
  const path = join(scratch, name);
  writeFileSync(path, edit(readFileSync(join('../../plugins/webapp/fixtures', name), 'utf8')));
  return path;
}

test('each fixture gets wasmop test’s verdict and differences', () => {
  const passing = fixture('converged.yaml');
  const wrong = fixture('gone.yaml', (text) => text.replace('outcome: done', 'outcome: requeue-after 30s'));
  const results = runFixtures([passing, wrong], webapp);
  assert.deepEqual(
    results.map((r) => [basename(r.file), r.passed]),
    [
      ['converged.yaml', true],
      ['gone.yaml', false],
    ],
  );
  assert.match(results[1]!.differences[0]!, /outcome: expected `requeue-after 30s`, got `done`/);
  assert.match(report(results[1]!), /^FAIL {2}/);
});

test('a file that is no fixture fails naming what is wrong', () => {
  const broken = join(scratch, 'broken.yaml');
  writeFileSync(broken, 'objects: 3\n');
  const [result] = runFixtures(broken, webapp);
  assert.equal(result?.passed, false);
  assert.match(result!.differences[0]!, /broken\.yaml/);
});

test('a folder with no fixtures is an error in wasmop’s words', () => {
  const empty = mkdtempSync(join(scratch, 'empty-'));
  assert.throws(() => runFixtures(empty, webapp), /no fixture files/);
});

test('without wasmop it says where to get one', () => {
  const saved = process.env.WASMOP;
  process.env.WASMOP = join(scratch, 'no-such-wasmop');
  try {
    assert.throws(() => runFixtures(scratch, { plugin: join(scratch, 'elsewhere') }), /set WASMOP/);
  } finally {
    process.env.WASMOP = saved;
  }
});
