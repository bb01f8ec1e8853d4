import unittest
from pathlib import Path

from wasmop.testing import FixtureTestCase

HERE = Path(__file__).resolve().parent


class FixturesTest(FixtureTestCase):
    plugin = HERE.parent

    def test_every_fixture_passes_against_the_built_component(self):
        results = self.assertFixturesPass(HERE.parent.parent / "fixtures")
        self.assertEqual(len(results), len(list((HERE.parent.parent / "fixtures").glob("*.yaml"))))


if __name__ == "__main__":
    unittest.main()
