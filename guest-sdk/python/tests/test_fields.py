import copy
import json
import unittest

from wasmop import Fields
from wasmop.fields import camel
from wasmop.kinds import Deployment
from wasmop.object import parse


class CamelTest(unittest.TestCase):
    def test_snake_case_becomes_the_kubernetes_json_key(self):
        self.assertEqual(camel("ready_replicas"), "readyReplicas")
        self.assertEqual(camel("api_version"), "apiVersion")
        self.assertEqual(camel("cluster_ip"), "clusterIP")
        self.assertEqual(camel("pod_cidrs"), "podCIDRs")
        self.assertEqual(camel("container_id"), "containerID")
        self.assertEqual(camel("replicas"), "replicas")
        self.assertEqual(camel("continue_"), "continue")


class FieldsTest(unittest.TestCase):
    def test_attributes_read_and_write_camel_case_keys(self):
        dep = parse('{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},'
                    '"status":{"readyReplicas":2}}')
        self.assertIsInstance(dep, Deployment)
        self.assertEqual(dep.status.ready_replicas, 2)
        dep.spec = {"replicas": 3}
        dep.spec.min_ready_seconds = 5
        self.assertEqual(dep["spec"], {"replicas": 3, "minReadySeconds": 5})

    def test_absent_fields_read_as_none_but_private_names_raise(self):
        fields = Fields()
        self.assertIsNone(fields.anything)
        with self.assertRaises(AttributeError):
            fields._private

    def test_exact_keys_win_over_camel_case(self):
        fields = Fields({"type": "ClusterIP", "my_key": 1})
        self.assertEqual(fields.type, "ClusterIP")
        self.assertEqual(fields.my_key, 1)

    def test_keywords_are_camel_cased_and_dicts_kept_as_given(self):
        fields = Fields(match_labels={"app.kubernetes.io/name": "web"})
        self.assertEqual(fields, {"matchLabels": {"app.kubernetes.io/name": "web"}})
        self.assertIsInstance(fields.match_labels, Fields)

    def test_nested_dicts_in_lists_become_fields(self):
        fields = Fields(containers=[{"name": "web", "ports": [{"containerPort": 80}]}])
        self.assertEqual(fields.containers[0].ports[0].container_port, 80)
        fields.update(volumes=[{"name": "data"}])
        self.assertEqual(fields.volumes[0].name, "data")
        self.assertEqual(fields.setdefault("extra", {"a": 1}).a, 1)

    def test_dig_walks_paths_with_a_default(self):
        dep = Deployment(spec={"template": {"spec": {"containers": [{"name": "web"}]}}})
        self.assertEqual(dep.dig("spec", "template", "spec", "containers", 0, "name"), "web")
        self.assertEqual(dep.dig("status", "readyReplicas", default=0), 0)
        self.assertEqual(dep.dig("spec", "template", "spec", "containers", 3, default="x"), "x")

    def test_deepcopy_and_json_round_trip(self):
        dep = Deployment(metadata={"name": "web", "labels": {"a": "b"}})
        clone = copy.deepcopy(dep)
        clone.metadata.labels["a"] = "c"
        self.assertEqual(dep.metadata.labels["a"], "b")
        self.assertIsInstance(clone, Deployment)
        self.assertEqual(json.loads(json.dumps(dep)), dep)

    def test_delete_attribute_removes_the_key(self):
        fields = Fields(ready_replicas=1)
        del fields.ready_replicas
        self.assertEqual(fields, {})


if __name__ == "__main__":
    unittest.main()
