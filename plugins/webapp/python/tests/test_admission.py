import unittest

from wasmop import Denied, Gvk, Object
from wasmop.webhooks import AdmissionRequest, ConversionFailed, UserInfo

from webapp import admission


def request(version, spec):
    """An admission request creating a WebApp of `version` with `spec`."""
    app = Object({"apiVersion": f"example.wasmop.dev/{version}", "kind": "WebApp",
                  "metadata": {"name": "shop"}, "spec": spec})
    return AdmissionRequest("uid", Gvk("example.wasmop.dev", version, "WebApp"), "default",
                            "shop", "create", app, None, UserInfo("alice", "1", []), False)


class AdmissionTest(unittest.TestCase):
    def test_replicas_and_images_are_validated_as_the_rust_plugin_does(self):
        admission.validate(request("v1alpha1", {"image": "nginx:1.27", "replicas": 50}))
        with self.assertRaisesRegex(Denied, "spec.replicas must be between 0 and 50, not 99"):
            admission.validate(request("v1alpha1", {"image": "nginx", "replicas": 99}))
        with self.assertRaisesRegex(Denied, "spec.instances must be between 0 and 50"):
            admission.validate(request("v1beta1", {"image": "nginx", "instances": -1}))
        with self.assertRaisesRegex(Denied, "not a well-formed image reference"):
            admission.validate(request("v1alpha1", {"image": "Not An Image!"}))

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
