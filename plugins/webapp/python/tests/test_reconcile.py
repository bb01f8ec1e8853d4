import json
import unittest
from unittest import mock

from componentize_py_types import Err
from wit_world.imports import cache as wit_cache
from wit_world.imports import client as wit_client
from wit_world.imports import log as wit_log
from wit_world.imports import plugin as wit_plugin
from wit_world.imports import types as wit

from wasmop.exports import WitWorld

import webapp

STORED = {"apiVersion": "example.wasmop.dev/v1alpha1", "kind": "WebApp",
          "metadata": {"name": "shop", "namespace": "prod", "uid": "u", "resourceVersion": "5"},
          "spec": {"image": "nginx", "replicas": 1, "port": 8080}}


class FinalizerTest(unittest.TestCase):
    def test_the_finalizer_is_added_by_an_update_at_the_read_resource_version(self):
        updates = []

        def update(text):
            updates.append(json.loads(text))
            raise Err(wit.Error_Conflict(wit.Status(409, "Conflict", "modified")))

        with mock.patch.object(wit_cache, "get", lambda *args: json.dumps(STORED)), \
                mock.patch.object(wit_client, "update", update):
            with self.assertRaises(Err) as raised:
                WitWorld().reconcile(wit.ObjectKey("prod", "shop"))
        self.assertEqual(updates[0]["metadata"]["finalizers"], [webapp.FINALIZER])
        self.assertEqual(updates[0]["metadata"]["resourceVersion"], "5")
        self.assertEqual(raised.exception.value,
                         wit_plugin.ReconcileError_Retryable("conflict: modified (409 Conflict)"))

    def test_a_deleted_webapp_is_released_by_an_update(self):
        deleting = json.loads(json.dumps(STORED))
        deleting["metadata"].update(deletionTimestamp="2026-01-01T00:00:00Z",
                                    finalizers=[webapp.FINALIZER, "other"])
        deleted, updates = [], []
        with mock.patch.object(wit_cache, "get", lambda *args: json.dumps(deleting)), \
                mock.patch.object(wit_client, "delete", lambda *args: deleted.append(args[2])), \
                mock.patch.object(wit_client, "update", lambda text: updates.append(text) or text), \
                mock.patch.object(wit_log, "log", lambda *args: None):
            self.assertEqual(WitWorld().reconcile(wit.ObjectKey("prod", "shop")),
                             wit_plugin.Outcome_Done())
        self.assertEqual(deleted, ["webapp-marker-shop"])
        self.assertEqual(json.loads(updates[0])["metadata"]["finalizers"], ["other"])


if __name__ == "__main__":
    unittest.main()
