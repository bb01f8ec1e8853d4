import json
import unittest
from unittest import mock

from componentize_py_types import Err
from wit_world.exports import webhooks as wit
from wit_world.imports import types as wit_types

from wasmop import ConversionFailed, Denied, plugin, reconciler
from wasmop.exports import Webhooks
from wasmop.kinds import ConfigMap


def request(obj, operation=wit.Operation.CREATE):
    """A WIT admission request for ConfigMap `obj`."""
    return wit.AdmissionRequest("uid-1", wit_types.Gvk("", "v1", "ConfigMap"), "ns", "a",
                                operation, json.dumps(obj), None,
                                wit.UserInfo("alice", "1", ["system:authenticated"]), False)


class WebhooksTest(unittest.TestCase):
    def setUp(self):
        patcher = mock.patch.object(plugin, "_registered", None)
        patcher.start()
        self.addCleanup(patcher.stop)
        self.reconcile = reconciler(name="t", version="1", primary=ConfigMap)(lambda req: None)

    def test_a_plugin_without_webhooks_declares_none(self):
        declared = Webhooks().describe_webhooks()
        self.assertEqual(declared, wit.Registration([], [], []))

    def test_the_declared_rules_reach_the_registration(self):
        self.reconcile.validator(ConfigMap, operations=["create", "delete"])(lambda r: None)
        self.reconcile.defaulter(ConfigMap)(lambda r: r.object)
        declared = Webhooks().describe_webhooks()
        gvk = wit_types.Gvk("", "v1", "ConfigMap")
        self.assertEqual(declared.validate,
                         [wit.Rule(gvk, [wit.Operation.CREATE, wit.Operation.DELETE])])
        self.assertEqual(declared.default,
                         [wit.Rule(gvk, [wit.Operation.CREATE, wit.Operation.UPDATE])])
        with self.assertRaises(ValueError):
            self.reconcile.validator(ConfigMap, operations=["patch"])

    def test_a_validator_admits_with_warnings_or_refuses_with_denied(self):
        def validate(req):
            if req.object.data.get("bad"):
                raise Denied("no bad data", ["think again"])
            self.assertEqual((req.operation, req.user.username), ("create", "alice"))
            return ["looks fine"]
        self.reconcile.validator(ConfigMap)(validate)
        good = Webhooks().validate(request({"data": {"ok": "1"}}))
        self.assertEqual(good, wit.Verdict_Allowed(["looks fine"]))
        bad = Webhooks().validate(request({"data": {"bad": "1"}}))
        self.assertEqual(bad, wit.Verdict_Denied(wit.Denial("no bad data", ["think again"])))

    def test_a_defaulter_returns_the_object_or_refuses(self):
        def default(req):
            if "data" not in req.object:
                raise Denied("no data")
            req.object.data.setdefault("port", "8080")
            return req.object
        self.reconcile.defaulter(ConfigMap)(default)
        answer = json.loads(Webhooks().default(request({"data": {}})))
        self.assertEqual(answer["data"], {"port": "8080"})
        with self.assertRaises(Err) as raised:
            Webhooks().default(request({}))
        self.assertEqual(raised.exception.value, wit.Denial("no data", []))

    def test_a_converter_converts_or_fails(self):
        def convert(obj, api_version):
            if api_version != "v2":
                raise ConversionFailed(f"no {api_version}")
            obj["apiVersion"] = api_version
            return obj
        self.reconcile.converter(ConfigMap)(convert)
        self.assertEqual(Webhooks().describe_webhooks().convert,
                         [wit_types.Gvk("", "v1", "ConfigMap")])
        self.assertEqual(json.loads(Webhooks().convert('{"apiVersion": "v1"}', "v2")),
                         {"apiVersion": "v2"})
        with self.assertRaises(Err) as raised:
            Webhooks().convert('{"apiVersion": "v1"}', "v3")
        self.assertEqual(raised.exception.value, "no v3")


if __name__ == "__main__":
    unittest.main()
