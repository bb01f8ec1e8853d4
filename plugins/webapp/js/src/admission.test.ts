import assert from 'node:assert/strict';
import { test } from 'node:test';

import { wellFormedImage } from './admission.ts';

test('images are checked as the distribution spec writes them', () => {
  for (const ref of ['nginx', 'nginx:1.27', 'localhost:5000/team/app:v1', `ghcr.io/a/b@sha256:${'ab'.repeat(32)}`]) {
    assert.ok(wellFormedImage(ref), ref);
  }
  for (const ref of ['Not An Image!', 'nginx:', 'UPPER/case', `a/${'b'.repeat(260)}`]) {
    assert.ok(!wellFormedImage(ref), ref);
  }
});
