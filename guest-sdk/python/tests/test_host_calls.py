import logging
import unittest

from fake_host import failing, imports, status
from wit_world.imports import cache as wit_cache
from wit_world.imports import client as wit_client
from wit_world.imports import events as wit_events
from wit_world.imports import log as wit_log
from wit_world.imports import types as wit

from wasmop import NotFound, cache, client, events
from wasmop.kinds import ConfigMap, Deployment
from wasmop.object import dump

CM = '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"ns","uid":"u"}}'
CM_GVK = wit.Gvk("", "v1", "ConfigMap")
NOT_FOUND = wit.Error_NotFound(status(404, "NotFound"))


class CacheTest(unittest.TestCase):
    def test_get_parses_the_kind_asked_for(self):
        with imports(wit_cache, get=lambda *args: CM) as calls:
            cm = cache.get(ConfigMap, "ns", "a")
        self.assertIsInstance(cm, ConfigMap)
        self.assertEqual(cm.metadata.uid, "u")
        self.assertEqual(calls, [("get", (CM_GVK, "ns", "a"))])

    def test_get_or_none_turns_only_not_found_into_none(self):
        with imports(wit_cache, get=failing(NOT_FOUND)):
            self.assertIsNone(cache.get_or_none(ConfigMap, "ns", "a"))
            with self.assertRaises(NotFound):
                cache.get(ConfigMap, "ns", "a")

    def test_list_passes_selectors_in_kubernetes_syntax(self):
        with imports(wit_cache, list=lambda *args: [CM, CM]) as calls:
            found = cache.list(ConfigMap, namespace="ns", label_selector={"a": "1", "b": "2"},
                               field_selector="metadata.name=a")
        self.assertEqual(len(found), 2)
        options = calls[0][1][1]
        self.assertEqual(options, wit_cache.ListOptions("ns", "a=1,b=2", "metadata.name=a"))

    def test_a_class_that_is_not_a_kind_is_refused(self):
        with self.assertRaisesRegex(TypeError, "not a declared kind"):
            cache.get(dict, "ns", "a")


class ClientTest(unittest.TestCase):
    def test_apply_sends_the_object_with_force(self):
        dep = Deployment(metadata={"name": "web", "namespace": "shop"})
        with imports(wit_client, patch=lambda *args: dump(dep)) as calls:
            applied = client.apply(dep, force=True)
        self.assertIsInstance(applied, Deployment)
        gvk, namespace, name, body = calls[0][1]
        self.assertEqual((gvk.kind, namespace, name), ("Deployment", "shop", "web"))
        self.assertEqual(body, wit_client.PatchBody_Apply(wit_client.ApplyPatch(dump(dep), True)))

    def test_patch_is_a_merge_patch_for_a_dict_and_a_json_patch_for_a_list(self):
        with imports(wit_client, patch_status=lambda *args: CM) as calls:
            client.patch_status(ConfigMap, "ns", "a", {"status": {"x": 1}})
            client.patch_status(ConfigMap, "ns", "a", [{"op": "remove", "path": "/status"}])
        self.assertEqual(calls[0][1][3], wit_client.PatchBody_Merge('{"status":{"x":1}}'))
        self.assertEqual(calls[1][1][3],
                         wit_client.PatchBody_Json('[{"op":"remove","path":"/status"}]'))
        with self.assertRaises(TypeError):
            client.patch(ConfigMap, "ns", "a", "text")

    def test_delete_sends_preconditions_and_propagation(self):
        with imports(wit_client, delete=lambda *args: None) as calls:
            client.delete(ConfigMap, "ns", "a", uid="u", propagation="foreground")
            client.delete(ConfigMap, "ns", "a")
        self.assertEqual(calls[0][1][3], wit_client.DeleteOptions(
            wit_client.Preconditions("u", None), wit_client.Propagation.FOREGROUND))
        self.assertEqual(calls[1][1][3], wit_client.DeleteOptions(None, None))

    def test_delete_missing_ok_ignores_only_not_found(self):
        with imports(wit_client, delete=failing(NOT_FOUND)):
            client.delete(ConfigMap, "ns", "a", missing_ok=True)
            with self.assertRaises(NotFound):
                client.delete(ConfigMap, "ns", "a")

    def test_update_returns_the_stored_object(self):
        cm = ConfigMap(metadata={"name": "a", "namespace": "ns", "resourceVersion": "1"})
        with imports(wit_client, update=lambda text: CM) as calls:
            stored = client.update(cm)
        self.assertEqual(calls, [("update", (dump(cm),))])
        self.assertEqual(stored.metadata.uid, "u")


class EventsTest(unittest.TestCase):
    def test_record_names_the_object(self):
        cm = ConfigMap(metadata={"name": "a", "namespace": "ns", "uid": "u"})
        with imports(wit_events, record=lambda *args: None) as calls:
            events.normal(cm, "Created", "Created it")
            events.record(cm, "warning", "Failed", "It failed")
        about = wit_events.Regarding(CM_GVK, "ns", "a", "u")
        self.assertEqual(calls[0][1], (about, wit_events.EventType.NORMAL, "Created", "Created it"))
        self.assertEqual(calls[1][1][1], wit_events.EventType.WARNING)


class LogTest(unittest.TestCase):
    def test_records_go_to_the_host_with_levels_and_extra_fields(self):
        logger = logging.getLogger("wasmop.test")
        with imports(wit_log, log=lambda *args: None) as calls:
            logger.info("created %s", "web", extra={"namespace": "shop"})
            logger.warning("slow")
            logger.log(5, "details")
            logger.debug("debugging")
            logger.critical("down")
        levels = [args[0] for _, args in calls]
        self.assertEqual(levels, [wit_log.Level.INFO, wit_log.Level.WARN, wit_log.Level.TRACE,
                                  wit_log.Level.DEBUG, wit_log.Level.ERROR])
        self.assertEqual(calls[0][1][1:], ("created web", [("namespace", "shop")]))


if __name__ == "__main__":
    unittest.main()
