"""The webhook request builders of `wasmop.testing`: admission requests filled in as `wasmop test`
fills in a fixture's, the same a webhook gets in the sandbox, and the reviews the apiserver posts."""

import json
import unittest
from unittest import mock

from wit_world.exports import webhooks as wit
from wit_world.imports import types as wit_types

from wasmop import Denied, Fields, Gvk, Object, plugin, reconciler
from wasmop.exports import Webhooks
from wasmop.exports import admission_request as from_wit
from wasmop.kinds import ConfigMap
from wasmop.testing import TEST_UID, admission_request, admission_review, conversion_review
from wasmop.webhooks import UserInfo

APP = {"apiVersion": "example.wasmop.dev/v1alpha1", "kind": "WebApp",
       "metadata": {"namespace": "shop", "name": "web"}, "spec": {"replicas": 3}}
CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}, "data": {"a": "1"}}


def wit_request(review: dict) -> wit.AdmissionRequest:
    """The WIT request the host hands a plugin for `review`, as its webhook server reads one."""
    request = review["request"]
    kind, user = request["kind"], request["userInfo"]

    def text(key: str):
        return json.dumps(request[key]) if key in request else None
    return wit.AdmissionRequest(
        request["uid"], wit_types.Gvk(kind["group"], kind["version"], kind["kind"]),
        request.get("namespace", ""), request["name"], wit.Operation[request["operation"]],
        text("object"), text("oldObject"),
        wit.UserInfo(user["username"], user.get("uid", ""), user.get("groups", [])),
        request["dryRun"])


class AdmissionRequestTest(unittest.TestCase):
    def test_an_object_alone_is_created_by_the_test_user(self):
        request = admission_request(APP)
        self.assertEqual(request.operation, "create")
        self.assertEqual(request.kind, Gvk("example.wasmop.dev", "v1alpha1", "WebApp"))
        self.assertEqual((request.namespace, request.name), ("shop", "web"))
        self.assertEqual(request.object, APP)
        self.assertIsNone(request.old_object)
        self.assertEqual(request.user, UserInfo("wasmop-test", "", []))
        self.assertEqual((request.uid, request.dry_run), ("wasmop-test", False))

    def test_both_objects_are_an_update_and_an_old_object_alone_a_delete(self):
        old = dict(APP, spec={"replicas": 2})
        update = admission_request(APP, old)
        self.assertEqual((update.operation, update.object.spec.replicas,
                          update.old_object.spec.replicas), ("update", 3, 2))
        delete = admission_request(old_object=old)
        self.assertEqual((delete.operation, delete.object, delete.old_object), ("delete", None, old))
        self.assertEqual((delete.kind.kind, delete.name), ("WebApp", "web"))

    def test_the_kind_of_a_core_object_has_the_empty_group_and_no_namespace_is_empty(self):
        request = admission_request(CM)
        self.assertEqual(request.kind, Gvk("", "v1", "ConfigMap"))
        self.assertEqual((request.namespace, request.name), ("", "settings"))
        bare = admission_request({"spec": {}})
        self.assertEqual((bare.kind, bare.namespace, bare.name), (Gvk("", "", ""), "", ""))

    def test_the_options_are_taken_as_given(self):
        request = admission_request(APP, operation="CONNECT", user="alice",
                                    groups=("system:authenticated",), dry_run=True, uid="u-1")
        self.assertEqual(request.operation, "connect")
        self.assertEqual(request.user, UserInfo("alice", "", ["system:authenticated"]))
        self.assertEqual((request.uid, request.dry_run), ("u-1", True))

    def test_objects_are_parsed_copies_of_their_declared_kind(self):
        given = ConfigMap(metadata={"name": "settings"}, data={"a": "1"})
        request = admission_request(given)
        self.assertIs(type(request.object), ConfigMap)
        self.assertIs(type(request.object.metadata), Fields)
        self.assertEqual(request.object.data.a, "1")
        self.assertIs(type(admission_request(APP).object), Object)
        request.object.data["a"] = "changed"
        self.assertEqual(given.data.a, "1")

    def test_a_request_needs_an_object_a_known_operation_and_dicts(self):
        with self.assertRaisesRegex(ValueError, "needs its object or old_object"):
            admission_request()
        with self.assertRaisesRegex(ValueError, "one of create, update, delete, connect; got 'patch'"):
            admission_request(APP, operation="patch")
        with self.assertRaisesRegex(TypeError, "old_object must be a dict or an Object, not str"):
            admission_request(APP, json.dumps(APP))

    def test_it_is_the_request_a_webhook_gets_from_the_host_for_its_review(self):
        cases = [admission_request(CM), admission_request(APP, dict(APP, spec={}), user="alice",
                                                          groups=["devs"], dry_run=True),
                 admission_request(old_object=APP, uid="u-2")]
        for built in cases:
            with self.subTest(operation=built.operation):
                received = from_wit(wit_request(admission_review(built)))
                self.assertEqual(received, built)
                self.assertIs(type(received.object), type(built.object))
                self.assertIs(type(received.old_object), type(built.old_object))


class ReviewTest(unittest.TestCase):
    def test_an_admission_review_is_what_the_apiserver_posts(self):
        old = dict(APP, spec={"replicas": 2})
        review = admission_review(admission_request(APP, old, groups=["devs"], dry_run=True))
        self.assertEqual(review, {
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                "uid": "wasmop-test",
                "kind": {"group": "example.wasmop.dev", "version": "v1alpha1", "kind": "WebApp"},
                "resource": {"group": "example.wasmop.dev", "version": "v1alpha1", "resource": "webapps"},
                "namespace": "shop",
                "name": "web",
                "operation": "UPDATE",
                "userInfo": {"username": "wasmop-test", "groups": ["devs"]},
                "object": APP,
                "oldObject": old,
                "dryRun": True,
            },
        })
        self.assertIs(type(review["request"]["object"]), dict)
        self.assertIs(type(review["request"]["object"]["metadata"]), dict)

    def test_an_admission_review_leaves_out_what_the_request_has_not(self):
        review = admission_review(admission_request(CM))
        self.assertEqual(review["request"], {
            "uid": "wasmop-test",
            "kind": {"group": "", "version": "v1", "kind": "ConfigMap"},
            "resource": {"group": "", "version": "v1", "resource": "configmaps"},
            "name": "settings",
            "operation": "CREATE",
            "userInfo": {"username": "wasmop-test"},
            "object": CM,
            "dryRun": False,
        })
        deleted = admission_review(admission_request(old_object=CM))["request"]
        self.assertEqual((deleted["operation"], "object" in deleted, deleted["oldObject"]),
                         ("DELETE", False, CM))

    def test_a_conversion_review_is_what_the_apiserver_posts(self):
        given = ConfigMap(metadata={"name": "settings"})
        review = conversion_review("example.wasmop.dev/v1beta1", [APP, given])
        self.assertEqual(review, {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "ConversionReview",
            "request": {"uid": TEST_UID, "desiredAPIVersion": "example.wasmop.dev/v1beta1",
                        "objects": [APP, {"apiVersion": "v1", "kind": "ConfigMap",
                                          "metadata": {"name": "settings"}}]},
        })
        self.assertIs(type(review["request"]["objects"][1]), dict)
        with self.assertRaisesRegex(TypeError, r"objects\[0\] must be a dict"):
            conversion_review("v1", [["not", "an", "object"]])


class DispatchTest(unittest.TestCase):
    """A validator answers a built request called natively as it does through the exports."""

    def setUp(self):
        patcher = mock.patch.object(plugin, "_registered", None)
        patcher.start()
        self.addCleanup(patcher.stop)
        self.reconcile = reconciler(name="t", version="1", primary=ConfigMap)(lambda req: None)

    def test_a_denial_is_the_same_natively_and_through_the_exports(self):
        def validate(request):
            if request.object.data.get("bad"):
                raise Denied(f"{request.user.username} may not {request.operation} bad data")
        self.reconcile.validator(ConfigMap)(validate)
        request = admission_request(dict(CM, data={"bad": "1"}))
        with self.assertRaisesRegex(Denied, "^wasmop-test may not create bad data$"):
            validate(request)
        verdict = Webhooks().validate(wit_request(admission_review(request)))
        self.assertEqual(verdict, wit.Verdict_Denied(wit.Denial("wasmop-test may not create bad data", [])))
        self.assertEqual(Webhooks().validate(wit_request(admission_review(admission_request(CM)))),
                         wit.Verdict_Allowed([]))


if __name__ == "__main__":
    unittest.main()
