import json
import logging
import os
import tempfile
import unittest
from unittest import mock

from wasmop import (Conflict, Permission, RequeueAfter, cache, client, conditions, events, plugin,
                    reconciler)
from wasmop.kinds import ConfigMap, Secret
from wasmop.testing import FixtureError, FixtureTestCase, FixtureWrite, parse_fixture, run_fixture
from wasmop.testing.fixture import Ref
from wasmop.testing.store import Refused, Store

log = logging.getLogger("stamp")

REF = Ref("v1", "ConfigMap", "ns", "a")

STAMPED = """
name: an unstamped ConfigMap is stamped with the time
now: 2026-03-04T05:06:07.8Z
objects:
  - {apiVersion: v1, kind: ConfigMap, metadata: {namespace: ns, name: a}, data: {k: v}}
request: {namespace: ns, name: a}
expect:
  outcome: requeue-after 1500ms priority 2
  writes:
    - verb: merge-patch
      apiVersion: v1
      kind: ConfigMap
      namespace: ns
      name: a
      body: {metadata: {annotations: {stamped: "2026-03-04T05:06:07Z"}}}
"""


def stamp(req):
    """Stamps a ConfigMap with the time, patching once more when the first patch conflicts."""
    cm = cache.get_or_none(ConfigMap, req.namespace, req.name)
    if cm is None or (cm.metadata.annotations or {}).get("stamped"):
        return None
    log.info("stamping %s", req, extra={"by": "test"})
    events.normal(cm, "Stamped", f"Stamped {req}")
    body = {"metadata": {"annotations": {"stamped": conditions.now()}}}
    try:
        client.patch(ConfigMap, req.namespace, req.name, body)
    except Conflict:
        client.patch(ConfigMap, req.namespace, req.name, body)
    return RequeueAfter(1.5, priority=2)


def fixture_file(test, text):
    """A fixture file holding `text`, removed after `test`."""
    handle, path = tempfile.mkstemp(suffix=".yaml")
    with os.fdopen(handle, "w") as file:
        file.write(text)
    test.addCleanup(os.remove, path)
    return path


class RunFixtureTest(FixtureTestCase):
    def setUp(self):
        patcher = mock.patch.object(plugin, "_registered", None)
        patcher.start()
        self.addCleanup(patcher.stop)

    def register(self, function, verbs=("patch",)):
        permissions = [Permission(ConfigMap, list(verbs))]
        reconciler(name="stamp", version="1", primary=ConfigMap, permissions=permissions)(function)

    def run_text(self, text):
        return run_fixture(fixture_file(self, text))

    def test_a_fixture_the_plugin_matches_passes_with_the_clock_at_its_now(self):
        self.register(stamp)
        path = fixture_file(self, STAMPED)
        result = self.assertFixturePasses(path)
        self.assertEqual(result.outcome, "requeue-after 1500ms priority 2")
        self.assertEqual([w.target() for w in result.writes], ["merge-patch v1 ConfigMap ns/a"])
        self.assertEqual([(e.type, e.reason, e.regarding) for e in result.events],
                         [("Normal", "Stamped", "ConfigMap ns/a")])
        self.assertEqual([str(line) for line in result.logs], ["INFO stamping ns/a by=test"])
        self.assertEqual(result.report(), f"ok    {result.name} ({path})")

    def test_each_difference_is_reported_as_wasmop_test_reports_it(self):
        self.register(stamp)
        text = STAMPED.replace("outcome: requeue-after 1500ms priority 2", "outcome: done")
        text = text.replace('stamped: "2026-03-04T05:06:07Z"', 'stamped: "2026", by: me')
        text += ("    - {verb: delete, apiVersion: v1, kind: Secret, namespace: ns, name: s,\n"
                 "       body: {propagationPolicy: Orphan}}\n")
        result = self.run_text(text)
        prefix = "write 0 `merge-patch v1 ConfigMap ns/a`: at /metadata/annotations/"
        self.assertEqual(result.differences, [
            "outcome: expected `done`, got `requeue-after 1500ms priority 2`",
            f'{prefix}by: expected "me", absent',
            f'{prefix}stamped: expected "2026", sent "2026-03-04T05:06:07Z"',
            "expected write 1 `delete v1 Secret ns/s`: not sent",
        ])
        with self.assertRaises(AssertionError) as failed:
            self.assertFixturePasses(fixture_file(self, text))
        for line in result.differences + ["log: INFO stamping ns/a by=test"]:
            self.assertIn(line, str(failed.exception))

    def test_a_write_not_expected_is_explained_against_the_cached_object(self):
        self.register(stamp)
        text = STAMPED.split("  writes:")[0].replace("requeue-after 1500ms priority 2", "error")
        result = self.run_text(text)
        target = "write 0 `merge-patch v1 ConfigMap ns/a`: "
        self.assertEqual(result.differences, [
            "outcome: expected `error`, got `requeue-after 1500ms priority 2`",
            f"{target}sent, not expected; against the cached object it changes:",
            f'{target}/metadata/annotations/stamped from null to "2026-03-04T05:06:07Z"',
        ])

    def test_the_nth_write_to_a_target_gets_the_nth_rejection(self):
        self.register(stamp)
        write = STAMPED.split("  writes:\n")[1]
        rejected = write.replace("name: a\n", "name: a\n      rejected: {reason: Conflict}\n")
        once = STAMPED.replace(write, rejected + write)
        self.assertEqual(self.run_text(once).differences, [])
        twice = STAMPED.replace(write, rejected + rejected).replace(
            "requeue-after 1500ms priority 2", "error")
        result = self.run_text(twice)
        self.assertEqual(result.differences, [])
        self.assertEqual(result.error,
                         "plugin stamp: reconcile of ns/a failed: conflict:  (409 Conflict)")

    def test_a_call_outside_the_declared_permissions_is_refused_and_not_sent(self):
        def delete_secret(req):
            client.delete(Secret, req.namespace, "s")
        self.register(delete_secret)
        result = self.run_text("request: {namespace: ns, name: a}\nexpect: {outcome: error}\n")
        self.assertEqual((result.differences, result.writes), ([], []))
        self.assertIn("forbidden by the plugin's declared permissions: plugin stamp may not "
                      "Delete Secret.v1 in namespace ns", result.error)
        expected = self.run_text("request: {namespace: ns, name: a}\nexpect: {writes: [{verb: "
                                 "delete, apiVersion: v1, kind: Secret, namespace: ns, name: s}]}")
        self.assertEqual(expected.report().splitlines()[1:], [
            "        expected write 0 `delete v1 Secret ns/s`: not sent",
            f"        error: {result.error}",
        ])

    def test_expected_events_are_compared_as_writes_are(self):
        self.register(stamp)
        regarding = "regarding: {apiVersion: v1, kind: ConfigMap, namespace: ns, name: a}"
        stated = STAMPED + f"  events:\n    - {{type: Normal, reason: Stamped, message: Stamped ns/a, {regarding}}}\n"
        self.assertEqual(self.run_text(stated).differences, [])
        target = "Normal Stamped v1 ConfigMap ns/a"
        wrong = stated.replace("message: Stamped ns/a", "message: Stamped ns/b")
        self.assertEqual(self.run_text(wrong).differences, [
            f'event 0 `{target}`: message: expected "Stamped ns/b", recorded "Stamped ns/a"'])
        none = STAMPED + "  events: []\n"
        self.assertEqual(self.run_text(none).differences, [
            f'event 0 `{target}`: recorded, not expected: "Stamped ns/a"'])
        missing = stated.replace("reason: Stamped", "reason: Scaled")
        self.assertEqual(self.run_text(missing).differences, [
            f'event 0 `{target}`: recorded, not expected: "Stamped ns/a"',
            "expected event 0 `Normal Scaled v1 ConfigMap ns/a`: not recorded"])

    def test_requeue_durations_compare_as_durations(self):
        self.register(stamp)
        text = STAMPED.replace("requeue-after 1500ms priority 2", "requeue-after 1.5s priority 2")
        self.assertEqual(self.run_text(text).differences, [])
        later = STAMPED.replace("requeue-after 1500ms priority 2", "requeue-after 2s priority 2")
        self.assertEqual(self.run_text(later).differences, [
            "outcome: expected `requeue-after 2s priority 2`, got `requeue-after 1500ms priority 2`"])

    def test_a_written_object_without_a_resource_version_matches_one_that_omits_it(self):
        def relabel(req):
            cm = cache.get(ConfigMap, req.namespace, req.name)
            cm.metadata.labels = {"seen": "yes"}
            client.update(cm)
        self.register(relabel, ["update"])
        text = ("objects: [{apiVersion: v1, kind: ConfigMap, metadata: {namespace: ns, name: a}}]\n"
                "request: {namespace: ns, name: a}\n"
                "expect:\n  writes:\n    - {verb: update, apiVersion: v1, kind: ConfigMap, "
                "namespace: ns, name: a, body: {apiVersion: v1, kind: ConfigMap, metadata: "
                "{namespace: ns, name: a, labels: {seen: 'yes'}}}}\n")
        self.assertEqual(self.run_text(text).differences, [])
        stated = text.replace("name: a, labels", "name: a, resourceVersion: '7', labels")
        self.assertEqual(self.run_text(stated).differences, [
            'write 0 `update v1 ConfigMap ns/a`: at /metadata/resourceVersion: expected "7", '
            'sent "1"'])

    def test_a_write_not_expected_is_explained_whatever_its_verb(self):
        def status_and_delete(req):
            cm = cache.get(ConfigMap, req.namespace, req.name)
            cm["status"] = {"ready": True}
            client.update_status(cm)
            client.delete(ConfigMap, req.namespace, req.name)
        self.register(status_and_delete, ["status", "delete"])
        text = ("objects: [{apiVersion: v1, kind: ConfigMap, metadata: {namespace: ns, name: a, "
                "resourceVersion: '4'}, status: {ready: false}}]\nrequest: {namespace: ns, name: a}\n")
        status = "write 0 `update-status v1 ConfigMap ns/a`: "
        delete = "write 1 `delete v1 ConfigMap ns/a`: "
        self.assertEqual(self.run_text(text).differences, [
            f"{status}sent, not expected; against the cached object's status it changes:",
            f"{status}/status/ready from false to true",
            f'{delete}sent, not expected; it deletes the cached object, at resourceVersion "4"',
        ])
        closest = text + ("expect:\n  writes:\n    - {verb: merge-patch, apiVersion: v1, kind: "
                          "ConfigMap, namespace: ns, name: a, body: {status: {ready: 1}}}\n")
        self.assertEqual(self.run_text(closest).differences[:2], [
            f"{status}sent, not expected; the closest expected is write 0 `merge-patch v1 "
            "ConfigMap ns/a`, whose body differs:",
            f"{status}at /apiVersion: not expected, sent \"v1\"",
        ])

    def test_a_fixture_with_a_typo_fails_alone_naming_its_file(self):
        self.register(stamp)
        folder = tempfile.mkdtemp()
        self.addCleanup(lambda: [os.remove(os.path.join(folder, f)) for f in os.listdir(folder)]
                        and os.rmdir(folder))
        for name, text in [("a.yaml", STAMPED.replace("writes:", "wrties:")), ("b.yaml", STAMPED),
                           ("c.yaml", "request: {name: [")]:
            with open(os.path.join(folder, name), "w", encoding="utf-8") as file:
                file.write(text)

        class Plugin(FixtureTestCase):
            def test_fixtures(self):
                self.assertFixturesPass(folder)
        result = unittest.TestResult()
        Plugin("test_fixtures").run(result)
        self.assertEqual((result.testsRun, len(result.errors)), (1, 0))
        failed = {test.params["fixture"]: message for test, message in result.failures}
        self.assertEqual(sorted(failed), [os.path.join(folder, "a.yaml"),
                                          os.path.join(folder, "c.yaml")])
        self.assertIn("unknown field `wrties` in expect", failed[os.path.join(folder, "a.yaml")])
        self.assertIn("not valid YAML", failed[os.path.join(folder, "c.yaml")])

    def test_lists_select_by_labels_and_fields(self):
        found = []

        def select(req):
            found.append([cm.metadata.name for cm in cache.list(
                ConfigMap, namespace="ns", label_selector="app in (web,db),!legacy",
                field_selector="data.tier!=cold")])
        self.register(select)
        objects = [("a", "{app: web}", "hot"), ("b", "{app: db, legacy: 'y'}", "hot"),
                   ("c", "{app: db}", "cold"), ("d", "{app: api}", "hot"), ("e", "{app: db}", "")]
        text = "objects:\n" + "".join(
            f"  - {{apiVersion: v1, kind: ConfigMap, metadata: {{namespace: ns, name: {name}, "
            f"labels: {labels}}}, data: {{tier: '{tier}'}}}}\n" for name, labels, tier in objects)
        self.run_text(text + "request: {namespace: ns, name: a}\n")
        self.assertEqual(found, [["a", "e"]])


class FixtureFormatTest(unittest.TestCase):
    def test_unknown_fields_name_the_field_and_the_file(self):
        typo = STAMPED.replace("verb: merge-patch", "verb: merge-patch\n      forse: 1")
        path = fixture_file(self, typo)
        with self.assertRaises(FixtureError) as refused:
            run_fixture(path)
        self.assertEqual(str(refused.exception).split(": ", 1),
                         [f"fixture {path}", "unknown field `forse` in expect.writes[0], expected "
                          "one of `verb`, `status`, `force`, `apiVersion`, `kind`, `namespace`, "
                          "`name`, `body`, `rejected`"])

    def test_malformed_fixtures_are_refused_with_what_is_wrong(self):
        cases = {
            "wrties": STAMPED.replace("writes:", "wrties:"),
            "missing field `request` at the top level": "objects: []",
            "objects[0] has no apiVersion, kind or metadata.name":
                STAMPED.replace("{namespace: ns, name: a}, data", "{namespace: ns}, data"),
            "expect.writes[0].verb: 'patch' is not a verb":
                STAMPED.replace("verb: merge-patch", "verb: patch"),
            "now: 'yesterday' is not an RFC 3339 time":
                STAMPED.replace("now: 2026-03-04T05:06:07.8Z", "now: yesterday"),
            "request.name: expected a string, found a boolean":
                "request: {name: yes}",
            "the key 'request' is given twice": "request: {name: a}\nrequest: {name: b}",
            "non-finite float": "request: {name: a}\nobjects: [{x: .inf}]",
            "expect.outcome: `requeue-after 5 minutes` is no outcome":
                STAMPED.replace("requeue-after 1500ms priority 2", "requeue-after 5 minutes"),
            "expect.events[0].type: 'Info' is not an event type":
                "request: {name: a}\nexpect: {events: [{type: Info, reason: R, message: m, "
                "regarding: {apiVersion: v1, kind: ConfigMap, name: a}}]}",
            "unknown field `object` in expect.events[0].regarding":
                "request: {name: a}\nexpect: {events: [{type: Normal, reason: R, message: m, "
                "regarding: {apiVersion: v1, kind: ConfigMap, name: a, object: b}}]}",
        }
        for message, text in cases.items():
            with self.subTest(message):
                with self.assertRaises(FixtureError) as refused:
                    parse_fixture(text, "case.yaml")
                self.assertIn(message, str(refused.exception))
                self.assertTrue(str(refused.exception).startswith("fixture case.yaml: "))

    def test_scalars_resolve_as_the_host_reads_them(self):
        fixture = parse_fixture(
            "now: 2026-01-01T01:00:00+01:00\nrequest: {name: a}\nobjects: [{apiVersion: v1, "
            "kind: X, metadata: {name: a}, t: 2026-01-01T00:00:00Z, n: 017, o: 0o17, d: 1:30, "
            "b: on}]")
        self.assertEqual(fixture.now.isoformat(), "2026-01-01T00:00:00+00:00")
        obj = fixture.objects[0]
        self.assertEqual([obj[key] for key in "tnodb"],
                         ["2026-01-01T00:00:00Z", 17.0, 15, "1:30", True])


class StoreTest(unittest.TestCase):
    def write(self, verb, body, **fields):
        return FixtureWrite(verb, "v1", "ConfigMap", "a", "ns", body=body, **fields)

    def seeded(self, **metadata):
        store = Store()
        store.seed({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"namespace": "ns", "name": "a", **metadata}, "data": {"k": "1"}})
        return store

    def test_seeded_objects_get_what_they_lack_and_keep_what_they_have(self):
        store = self.seeded(uid="u")
        meta = json.loads(store.get(REF))["metadata"]
        self.assertEqual((meta["uid"], meta["resourceVersion"]), ("u", "1"))
        self.assertNotIn("generation", meta)
        store = self.seeded(generation=7)
        self.assertEqual(json.loads(store.get(REF))["metadata"]["generation"], 7)

    def test_only_objects_with_a_spec_are_given_a_generation_which_spec_changes_bump(self):
        store = self.seeded()
        widget = {"apiVersion": "example.wasmop.dev/v1", "kind": "Widget", "spec": {"size": 1},
                  "metadata": {"namespace": "ns", "name": "w"}}
        store.seed(widget)
        wref = Ref("example.wasmop.dev/v1", "Widget", "ns", "w")
        self.assertEqual(json.loads(store.get(wref))["metadata"]["generation"], 1)

        def written(verb, obj):
            return json.loads(store.write(FixtureWrite(verb, obj["apiVersion"], obj["kind"],
                                                       obj["metadata"]["name"], "ns", body=obj)))

        configmap = json.loads(store.get(REF))
        updated = written("update", {**configmap, "data": {"k": "2"}})
        self.assertNotIn("generation", updated["metadata"])
        created = written("create", {**configmap, "metadata": {"namespace": "ns", "name": "b"}})
        self.assertNotIn("generation", created["metadata"])
        labelled = json.loads(store.get(wref))
        labelled["metadata"]["labels"] = {"tier": "web"}
        self.assertEqual(written("update", labelled)["metadata"]["generation"], 1)
        resized = {**json.loads(store.get(wref)), "spec": {"size": 2}}
        self.assertEqual(written("update", resized)["metadata"]["generation"], 2)
        other = {**widget, "metadata": {"namespace": "ns", "name": "v"}}
        self.assertEqual(written("create", other)["metadata"]["generation"], 1)

    def test_updates_check_the_resource_version_and_bump_the_generation_on_change(self):
        store = self.seeded(generation=1)
        stale = {"apiVersion": "v1", "kind": "ConfigMap", "data": {"k": "2"},
                 "metadata": {"namespace": "ns", "name": "a", "resourceVersion": "9"}}
        with self.assertRaisesRegex(Refused, "Conflict"):
            store.write(self.write("update", stale))
        stale["metadata"]["resourceVersion"] = "1"
        meta = json.loads(store.write(self.write("update", stale)))["metadata"]
        self.assertEqual((meta["resourceVersion"], meta["generation"], meta["uid"]),
                         ("2", 2, "uid-1"))

    def test_patches_merge_keep_the_status_and_json_patches_apply(self):
        store = self.seeded()
        store.write(self.write("merge-patch", {"status": {"x": 1}}, status=True))
        store.write(self.write("merge-patch", {"data": {"k": None, "j": "2"}, "status": None}))
        patched = store.write(self.write("json-patch", [{"op": "add", "path": "/data/l",
                                                          "value": "3"}]))
        self.assertEqual({key: json.loads(patched)[key] for key in ("data", "status")},
                         {"data": {"j": "2", "l": "3"}, "status": {"x": 1}})
        with self.assertRaisesRegex(Refused, "Invalid"):
            store.write(self.write("json-patch", [{"op": "remove", "path": "/nope"}]))

    def test_finalizers_hold_deletion_until_removed(self):
        store = self.seeded(finalizers=["f"])
        store.write(self.write("delete", None))
        self.assertIn("deletionTimestamp", json.loads(store.get(REF))["metadata"])
        store.write(self.write("merge-patch", {"metadata": {"finalizers": None}}))
        with self.assertRaisesRegex(Refused, "NotFound"):
            store.get(REF)


if __name__ == "__main__":
    unittest.main()
