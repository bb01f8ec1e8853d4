import json
import unittest

from wasmop import Denied
from wasmop.object import parse
from wasmop.testing import admission_request, conversion_review
from wasmop.webhooks import ConversionFailed

from webapp import admission
from webapp.resource import WebApp


def webapp(version, spec):
    """A WebApp of `version` with `spec`, as a client sends it."""
    return {"apiVersion": f"example.wasmop.dev/{version}", "kind": "WebApp",
            "metadata": {"namespace": "default", "name": "shop"}, "spec": spec}


def request(version, spec):
    """The admission request creating a WebApp of `version` with `spec`, as the plugin gets it."""
    return admission_request(webapp(version, spec))


class AdmissionTest(unittest.TestCase):
    def test_replicas_and_images_are_validated_as_the_rust_plugin_does(self):
        admission.validate(request("v1alpha1", {"image": "nginx:1.27", "replicas": 50}))
        with self.assertRaisesRegex(Denied, "spec.replicas must be between 0 and 50, not 99"):
            admission.validate(request("v1alpha1", {"image": "nginx", "replicas": 99}))
        with self.assertRaisesRegex(Denied, "spec.instances must be between 0 and 50"):
            admission.validate(request("v1beta1", {"image": "nginx", "instances": -1}))
        with self.assertRaisesRegex(Denied, "not a well-formed image reference"):
            admission.validate(request("v1alpha1", {"image": "Not An Image!"}))

    def test_an_update_is_validated_by_its_new_object_and_a_delete_admitted(self):
        old = webapp("v1alpha1", {"image": "nginx", "replicas": 2})
        too_many = admission_request(webapp("v1alpha1", {"image": "nginx", "replicas": 51}), old)
        self.assertEqual(too_many.operation, "update")
        with self.assertRaises(Denied) as refused:
            admission.validate(too_many)
        self.assertEqual(refused.exception.message, "spec.replicas must be between 0 and 50, not 51")
        self.assertIsNone(admission.validate(admission_request(old_object=old)))

    def test_image_references(self):
        for good in ["nginx", "library/nginx:1.27", "registry.example.com:5000/team/app:v1.2",
                     "localhost/app", "ghcr.io/a/b@sha256:" + "a" * 64]:
            self.assertTrue(admission.well_formed_image(good), good)
        for bad in ["", "Nginx", "nginx:", "a//b", "Library/nginx", "nginx@sha256:abc",
                    "nginx:" + "t" * 129]:
            self.assertFalse(admission.well_formed_image(bad), bad)

    def test_a_missing_port_is_defaulted_and_a_given_one_kept(self):
        self.assertEqual(admission.default(request("v1alpha1", {"image": "a"}))["spec"]["port"],
                         8080)
        self.assertEqual(
            admission.default(request("v1alpha1", {"image": "a", "port": 9090}))["spec"]["port"],
            9090)

    def test_the_default_is_set_on_the_webapp_the_runtime_parses(self):
        built = request("v1alpha1", {"image": "a"})
        self.assertIsInstance(built.object, WebApp)
        defaulted = admission.default(built)
        self.assertEqual(defaulted.spec, {"image": "a", "port": 8080})
        self.assertEqual(defaulted.settings().port, 8080)

    def test_the_objects_of_a_conversion_review_convert(self):
        review = conversion_review("example.wasmop.dev/v1beta1",
                                   [webapp("v1alpha1", {"image": "a", "replicas": 2})])
        desired = review["request"]["desiredAPIVersion"]
        converted = [admission.convert(parse(json.dumps(obj)), desired)
                     for obj in review["request"]["objects"]]
        self.assertEqual([obj["spec"] for obj in converted], [{"image": "a", "instances": 2}])
        self.assertEqual(converted[0]["apiVersion"], "example.wasmop.dev/v1beta1")

    def test_replicas_and_instances_convert_both_ways(self):
        alpha = request("v1alpha1", {"image": "a", "replicas": 3}).object
        beta = admission.convert(alpha, "example.wasmop.dev/v1beta1")
        self.assertEqual(beta["spec"], {"image": "a", "instances": 3})
        self.assertEqual(beta["apiVersion"], "example.wasmop.dev/v1beta1")
        back = admission.convert(beta, "example.wasmop.dev/v1alpha1")
        self.assertEqual(back["spec"], {"image": "a", "replicas": 3})
        with self.assertRaises(ConversionFailed):
            admission.convert(back, "example.wasmop.dev/v7")


if __name__ == "__main__":
    unittest.main()
