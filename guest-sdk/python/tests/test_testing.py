"""The fixture helper: the plugin built and its fixtures run by `wasmop test`, each reported."""

import os
import shutil
import tempfile
import unittest
from pathlib import Path
from unittest import mock

from wasmop import testing

WEBAPP = Path(__file__).resolve().parents[3] / "plugins" / "webapp"


class FixtureHelperTest(unittest.TestCase):
    def setUp(self):
        self.scratch = Path(tempfile.mkdtemp())
        self.addCleanup(shutil.rmtree, self.scratch)

    def fixture(self, name, edit):
        text = edit((WEBAPP / "fixtures" / name).read_text())
        path = self.scratch / name
        path.write_text(text)
        return path

    def test_each_fixture_gets_wasmop_tests_verdict_and_differences(self):
        passing = self.fixture("converged.yaml", lambda text: text)
        wrong = self.fixture("gone.yaml", lambda text: text.replace("outcome: done", "outcome: requeue-after 30s"))
        results = testing.run_fixtures(passing, wrong, plugin=WEBAPP / "python")
        self.assertEqual([(Path(r.file).name, r.passed) for r in results],
                         [("converged.yaml", True), ("gone.yaml", False)])
        self.assertIn("outcome: expected `requeue-after 30s`, got `done`", results[1].differences[0])
        self.assertTrue(results[1].report().startswith("FAIL  "))

    def test_a_file_that_is_no_fixture_fails_naming_what_is_wrong(self):
        broken = self.scratch / "broken.yaml"
        broken.write_text("objects: 3\n")
        [result] = testing.run_fixtures(broken, plugin=WEBAPP / "python")
        self.assertFalse(result.passed)
        self.assertIn("broken.yaml", result.differences[0])

    def test_a_folder_with_no_fixtures_is_an_error_with_wasmops_words(self):
        with self.assertRaisesRegex(testing.WasmopError, "no fixture files"):
            testing.run_fixtures(self.scratch, plugin=WEBAPP / "python")

    def test_a_component_is_rebuilt_when_its_sources_change_not_its_tests(self):
        plugin = self.scratch / "webapp"
        shutil.copytree(WEBAPP / "python", plugin, ignore=shutil.ignore_patterns("__pycache__"))
        binary = testing.wasmop()
        before = testing._digest(plugin, binary)
        (plugin / "tests" / "test_fixtures.py").write_text("# edited\n")
        self.assertEqual(testing._digest(plugin, binary), before)
        (plugin / "webapp" / "__init__.py").write_text((plugin / "webapp" / "__init__.py").read_text() + "# edited\n")
        self.assertNotEqual(testing._digest(plugin, binary), before)

    def test_without_wasmop_it_says_where_to_get_one(self):
        with mock.patch.dict(os.environ, {"WASMOP": "", "PATH": str(self.scratch)}):
            with self.assertRaisesRegex(testing.WasmopError, "set WASMOP"):
                testing.wasmop()


if __name__ == "__main__":
    unittest.main()
