import { testFixtures } from '@wasmop/guest/testing';

import webapp from './index.ts';

testFixtures(webapp, '../fixtures');
