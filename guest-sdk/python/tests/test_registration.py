import unittest
from datetime import timedelta

from wit_world.imports import plugin as wit

from wasmop import Index, Label, Permission, Registration, Verb, Watch
from wasmop.kinds import ConfigMap, Deployment, Namespace


class RegistrationTest(unittest.TestCase):
    def test_fills_the_wit_record(self):
        reg = Registration(
            name="sync", version="1.0.0", primary=ConfigMap,
            predicates=["generation-changed"],
            owns=[Deployment],
            watches=[Watch(Namespace), Watch(Deployment, Label("app"), ["labels-changed"])],
            permissions=[Permission(ConfigMap, ["create", Verb.DELETE]),
                         Permission(Deployment, ["patch"], ["shop"])],
            indexes=[Index("by-node", ConfigMap, "data.node")],
            max_concurrent_reconciles=0,
            reconcile_timeout=timedelta(milliseconds=1500),
        ).to_wit()
        self.assertEqual(reg.primary, wit.types.Gvk("", "v1", "ConfigMap"))
        self.assertEqual(reg.predicates, [wit.Predicate.GENERATION_CHANGED])
        self.assertEqual(reg.owns, [wit.types.Gvk("apps", "v1", "Deployment")])
        self.assertEqual(reg.watches[0].mapping, wit.Mapping_Guest())
        self.assertEqual(reg.watches[1].mapping, wit.Mapping_Label("app"))
        self.assertEqual(reg.watches[1].predicates, [wit.Predicate.LABELS_CHANGED])
        self.assertEqual(reg.permissions[0].verbs, [wit.Verb.CREATE, wit.Verb.DELETE])
        self.assertEqual(reg.permissions[1].namespaces, ["shop"])
        self.assertEqual(reg.indexes[0].field, "data.node")
        self.assertEqual(reg.max_concurrent_reconciles, 1)
        self.assertEqual(reg.reconcile_timeout, 1500)

    def test_defaults_leave_limits_to_the_host(self):
        reg = Registration(name="a", version="1", primary=ConfigMap).to_wit()
        self.assertIsNone(reg.reconcile_timeout)
        self.assertEqual(reg.max_concurrent_reconciles, 1)

    def test_bad_names_are_refused_with_the_choices(self):
        with self.assertRaisesRegex(ValueError, "'craete' is not a verb; one of: get, list"):
            Permission(ConfigMap, ["craete"]).to_wit()
        with self.assertRaisesRegex(ValueError, "is not a mapping"):
            Watch(ConfigMap, "owner").to_wit()


if __name__ == "__main__":
    unittest.main()
