import json
import shutil
import tempfile
import unittest
from pathlib import Path

from wasmop.testing import FixtureTestCase, admission_request, admission_review, conversion_review

HERE = Path(__file__).resolve().parent

WEB = {"apiVersion": "example.wasmop.dev/v1alpha1", "kind": "WebApp",
       "metadata": {"namespace": "shop", "name": "web"}, "spec": {"image": "nginx:1.27", "replicas": 75}}


class FixturesTest(FixtureTestCase):
    plugin = HERE.parent

    def test_every_fixture_passes_against_the_built_component(self):
        results = self.assertFixturesPass(HERE.parent.parent / "fixtures")
        self.assertEqual(len(results), len(list((HERE.parent.parent / "fixtures").glob("*.yaml"))))

    def test_the_built_reviews_are_answered_by_the_component_as_expected(self):
        scratch = Path(tempfile.mkdtemp())
        self.addCleanup(shutil.rmtree, scratch)
        conversion = conversion_review("example.wasmop.dev/v1beta1", [WEB])["request"]
        del conversion["uid"]  # a fixture's conversion states its desired version and objects
        fixtures = {
            "refused": {"validate": admission_review(admission_request(WEB))["request"],
                        "expect": {"allowed": False,
                                   "message": "spec.replicas must be between 0 and 50, not 75"}},
            "defaulted": {"default": admission_review(admission_request(WEB, WEB))["request"],
                          "expect": {"allowed": True,
                                     "patch": [{"op": "add", "path": "/spec/port", "value": 8080}]}},
            "converted": {"convert": conversion,
                          "expect": {"converted": [dict(WEB, apiVersion="example.wasmop.dev/v1beta1",
                                                        spec={"image": "nginx:1.27", "instances": 75})]}},
        }
        for name, fixture in fixtures.items():
            (scratch / f"{name}.json").write_text(json.dumps(dict(fixture, name=name)))
        results = self.assertFixturesPass(scratch)
        self.assertEqual(sorted(result.name for result in results), sorted(fixtures))


if __name__ == "__main__":
    unittest.main()
