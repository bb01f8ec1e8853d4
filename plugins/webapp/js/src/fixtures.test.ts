import { testFixtures } from '@wasmop/guest/testing';

testFixtures('../fixtures');
