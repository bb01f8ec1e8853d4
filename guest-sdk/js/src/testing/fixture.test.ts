import assert from 'node:assert/strict';
import { test } from 'node:test';

import { DEFAULT_NOW, FixtureError, parseFixture } from './fixture.ts';

const FIXTURE = `
name: creates its Deployment
objects:
  - apiVersion: example.wasmop.dev/v1
    kind: WebApp
    metadata: {namespace: shop, name: web}
    spec: {replicas: 2}
request: {namespace: shop, name: web}
expect:
  outcome: requeue-after 30s
  writes:
    - verb: apply
      force: true
      apiVersion: apps/v1
      kind: Deployment
      namespace: shop
      name: web
      body: {apiVersion: apps/v1, kind: Deployment, metadata: {name: web, namespace: shop}}
      rejected: {reason: Conflict}
`;

/** The message parsing `text` is refused with. */
function refusal(text: string): string {
  try {
    parseFixture(text, 'f.yaml');
  } catch (err) {
    assert.ok(err instanceof FixtureError);
    return err.message;
  }
  assert.fail('the fixture was accepted');
}

test('a fixture reads with the defaults of what it leaves out', () => {
  const fixture = parseFixture(FIXTURE);
  assert.equal(fixture.name, 'creates its Deployment');
  assert.equal(fixture.now, DEFAULT_NOW);
  assert.deepEqual(fixture.expect.writes[0], {
    verb: 'apply',
    status: false,
    force: true,
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    namespace: 'shop',
    name: 'web',
    body: { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web', namespace: 'shop' } },
    rejected: { reason: 'Conflict', message: '' },
  });
  const bare = parseFixture('{"request": {"name": "everything"}}', 'bare.json');
  assert.deepEqual(bare, {
    name: 'bare.json',
    source: 'bare.json',
    now: DEFAULT_NOW,
    objects: [],
    request: { namespace: '', name: 'everything' },
    expect: { writes: [] },
  });
});

test('unknown fields are refused wherever they are, naming the field and the file', () => {
  assert.equal(
    refusal(FIXTURE.replace('writes:', 'wrties:')),
    'fixture f.yaml: unknown field `wrties` in expect, expected one of outcome, writes, events',
  );
  assert.match(refusal(`${FIXTURE}reqest: {}\n`), /^fixture f\.yaml: unknown field `reqest` in the fixture/);
  assert.match(refusal(FIXTURE.replace('{namespace: shop, name: web}\nexpect', '{ns: shop, name: web}\nexpect')), /`ns` in request/);
  assert.match(refusal(FIXTURE.replace('force: true', 'forced: true')), /`forced` in expect\.writes\[0\]/);
  assert.match(refusal(FIXTURE.replace('{reason: Conflict}', '{reason: Conflict, code: 409}')), /`code` in expect\.writes\[0\]\.rejected/);
});

test('what a fixture needs is checked: request, named objects, verbs, types, the time, YAML', () => {
  assert.equal(refusal('name: nothing\n'), 'fixture f.yaml: missing field `request`');
  assert.equal(
    refusal(FIXTURE.replace('metadata: {namespace: shop, name: web}\n    spec', 'metadata: {}\n    spec')),
    'fixture f.yaml: objects[0] has no apiVersion, kind or metadata.name',
  );
  assert.match(refusal(FIXTURE.replace('verb: apply', 'verb: patch')), /expect\.writes\[0\]\.verb: unknown verb `patch`/);
  assert.match(refusal(FIXTURE.replace('force: true', 'force: yes')), /`force` must be true or false, got "yes"/);
  assert.match(refusal(FIXTURE.replace('      name: web\n', '')), /expect\.writes\[0\]: missing field `name`/);
  assert.equal(
    refusal(`now: yesterday\n${FIXTURE}`),
    `fixture f.yaml: now: \`yesterday\` is not an RFC 3339 time like ${DEFAULT_NOW}`,
  );
  assert.match(refusal(`now: 1969-12-31T23:59:59Z\n${FIXTURE}`), /before 1970/);
  assert.match(refusal('request: {name: [unclosed\n'), /^fixture f\.yaml: not valid YAML: /);
  assert.match(refusal('- a list\n'), /the fixture must be a mapping/);
  const event = 'regarding: {apiVersion: v1, kind: ConfigMap, name: a}';
  assert.match(
    refusal(`request: {name: a}\nexpect: {events: [{type: Info, reason: R, message: m, ${event}}]}\n`),
    /expect\.events\[0\]\.type: unknown event type `Info`/,
  );
  assert.match(refusal(`request: {name: a}\nexpect: {events: [{type: Normal, reason: R, ${event}}]}\n`), /expect\.events\[0\]: missing field `message`/);
  assert.match(refusal('request: {name: a}\nexpect: {outcome: requeue-after 5 minutes}\n'), /expect\.outcome: `requeue-after 5 minutes` is no outcome/);
});
