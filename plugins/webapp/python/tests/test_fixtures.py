import unittest
from pathlib import Path

from wasmop.testing import FixtureTestCase

import webapp  # noqa: F401  (registers the reconciler the fixtures run against)

FIXTURES = Path(__file__).resolve().parent.parent.parent / "fixtures"


class FixturesTest(FixtureTestCase):
    def test_every_fixture_passes_in_process(self):
        self.assertFixturesPass(FIXTURES)


if __name__ == "__main__":
    unittest.main()
