import unittest

from wasmop import Gvk, Object, ObjectKey
from wasmop.kinds import ConfigMap, Deployment, Namespace
from wasmop.object import dump, parse


class Widget(Object, group="example.wasmop.dev", version="v1"):
    """A test kind."""


def stored_deployment() -> Deployment:
    return Deployment(metadata={"name": "web", "namespace": "shop", "uid": "uid-1",
                                "resourceVersion": "7"})


class KindTest(unittest.TestCase):
    def test_declared_kinds_have_their_gvk_and_api_version(self):
        self.assertEqual(Deployment.GVK, Gvk("apps", "v1", "Deployment"))
        self.assertEqual(Widget.GVK.api_version, "example.wasmop.dev/v1")
        self.assertEqual(str(Deployment.GVK), "apps/v1/Deployment")
        self.assertEqual(Namespace.GVK.api_version, "v1")

    def test_new_objects_carry_api_version_kind_and_metadata(self):
        widget = Widget(spec={"size": 1})
        self.assertEqual(widget, {"apiVersion": "example.wasmop.dev/v1", "kind": "Widget",
                                  "metadata": {}, "spec": {"size": 1}})
        self.assertEqual(widget.gvk, Widget.GVK)

    def test_parse_picks_the_declared_kind_or_a_plain_object(self):
        self.assertIsInstance(parse('{"apiVersion":"example.wasmop.dev/v1","kind":"Widget"}'),
                              Widget)
        other = parse('{"apiVersion":"x.dev/v1","kind":"Gadget","metadata":{}}')
        self.assertIs(type(other), Object)
        self.assertEqual(other.gvk, Gvk("x.dev", "v1", "Gadget"))
        with self.assertRaises(ValueError):
            parse("[1]")

    def test_dump_is_compact_json(self):
        self.assertEqual(dump({"a": [1, 2]}), '{"a":[1,2]}')

    def test_key_of_namespaced_and_cluster_scoped_objects(self):
        self.assertEqual(stored_deployment().key, ObjectKey("shop", "web"))
        self.assertEqual(str(stored_deployment().key), "shop/web")
        self.assertEqual(str(Namespace(metadata={"name": "shop"}).key), "shop")


class MetadataTest(unittest.TestCase):
    def test_controller_owner_ref_points_at_the_owner(self):
        owner = stored_deployment().controller_owner_ref()
        self.assertEqual(owner, {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web",
                                 "uid": "uid-1", "controller": True, "blockOwnerDeletion": True})

    def test_controller_owner_ref_needs_a_stored_owner(self):
        self.assertIsNone(Deployment(metadata={"name": "web"}).controller_owner_ref())

    def test_is_controlled_by_compares_kind_and_uid(self):
        owner = stored_deployment()
        child = ConfigMap()
        self.assertFalse(child.is_controlled_by(owner))
        child.metadata.owner_references = [owner.controller_owner_ref()]
        self.assertTrue(child.is_controlled_by(owner))
        other = stored_deployment()
        other.metadata.uid = "uid-2"
        self.assertFalse(child.is_controlled_by(other))

    def test_add_finalizer_is_idempotent(self):
        obj = stored_deployment()
        self.assertTrue(obj.add_finalizer("example.wasmop.dev/cleanup"))
        self.assertFalse(obj.add_finalizer("example.wasmop.dev/cleanup"))
        self.assertEqual(obj.metadata.finalizers, ["example.wasmop.dev/cleanup"])
        self.assertTrue(obj.has_finalizer("example.wasmop.dev/cleanup"))

    def test_remove_finalizer_keeps_the_others(self):
        obj = stored_deployment()
        obj.metadata.finalizers = ["a", "b"]
        self.assertTrue(obj.remove_finalizer("a"))
        self.assertFalse(obj.remove_finalizer("a"))
        self.assertEqual(obj.metadata.finalizers, ["b"])
        self.assertFalse(Deployment().remove_finalizer("a"))

    def test_is_deleting_reads_the_deletion_timestamp(self):
        obj = stored_deployment()
        self.assertFalse(obj.is_deleting())
        obj.metadata.deletion_timestamp = "2026-01-01T00:00:00Z"
        self.assertTrue(obj.is_deleting())


if __name__ == "__main__":
    unittest.main()
