import copy
import unittest

from wasmop.kinds import Deployment

from webapp import desired
from webapp.resource import WebApp


def app() -> WebApp:
    return WebApp(metadata={"name": "shop", "namespace": "prod", "uid": "uid-1", "generation": 3},
                  spec={"image": "nginx:1.27", "replicas": 2, "port": 8080})


def stored(want: Deployment) -> Deployment:
    """A Deployment as the apiserver returns it: the desired fields plus defaults and status."""
    dep = copy.deepcopy(want)
    dep.metadata.uid = "uid-d"
    dep.metadata.labels["extra"] = "x"
    dep.spec.revision_history_limit = 10
    pod = dep.spec.template.spec
    pod.restart_policy = "Always"
    pod.containers[0].image_pull_policy = "IfNotPresent"
    return dep


class DeploymentTest(unittest.TestCase):
    def test_a_stored_deployment_with_defaults_matches(self):
        want = desired.deployment(app(), app().controller_owner_ref())
        self.assertTrue(desired.deployment_matches(stored(want), want))

    def test_deployment_drift_is_detected(self):
        want = desired.deployment(app(), app().controller_owner_ref())

        def image(d):
            d.spec.template.spec.containers[0].image = "nginx:old"

        drifts = {
            "replicas": lambda d: setattr(d.spec, "replicas", 5),
            "image": image,
            "owner": lambda d: d.metadata.pop("ownerReferences"),
            "label": lambda d: d.metadata.labels.pop(desired.MANAGED_BY_LABEL),
        }
        for name, drift in drifts.items():
            with self.subTest(drift=name):
                actual = stored(want)
                drift(actual)
                self.assertFalse(desired.deployment_matches(actual, want))

    def test_the_deployment_is_what_the_rust_plugin_applies(self):
        want = desired.deployment(app(), app().controller_owner_ref())
        self.assertEqual(want.metadata.annotations, {desired.APPLIED_BY_ANNOTATION: "webapp/0.1.0"})
        self.assertEqual(want.spec.selector, {"matchLabels": {desired.NAME_LABEL: "shop"}})
        self.assertEqual(want.spec.template.spec.containers, [{
            "name": "web", "image": "nginx:1.27",
            "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}]}])
        self.assertEqual(want.metadata.owner_references[0].kind, "WebApp")


class ServiceTest(unittest.TestCase):
    def test_service_port_changes_are_detected(self):
        want = desired.service(app(), app().controller_owner_ref())
        actual = copy.deepcopy(want)
        actual.spec.cluster_ip = "10.0.0.7"
        self.assertTrue(desired.service_matches(actual, want))
        actual.spec.ports[0].port = 80
        self.assertFalse(desired.service_matches(actual, want))


class MarkerTest(unittest.TestCase):
    def test_the_marker_is_labelled_and_not_owned(self):
        marker = desired.marker(app())
        self.assertEqual(marker.metadata.name, "webapp-marker-shop")
        self.assertEqual(marker.metadata.labels, {desired.MARKER_LABEL: "shop"})
        self.assertIsNone(marker.metadata.owner_references)


class StatusTest(unittest.TestCase):
    def test_status_is_ready_when_all_replicas_are(self):
        progressing = desired.status(app(), 1)
        self.assertEqual(progressing.observed_generation, 3)
        self.assertEqual(progressing.conditions[0].status, "False")
        self.assertEqual(progressing.conditions[0].reason, "Progressing")
        self.assertEqual(progressing.conditions[0].message, "1/2 replicas ready")
        self.assertEqual(desired.status(app(), 2).conditions[0].reason, "Available")

    def test_a_converged_status_is_unchanged(self):
        webapp = app()
        webapp.status = desired.status(webapp, 2)
        webapp.status.conditions[0].last_transition_time = "2020-01-01T00:00:00Z"
        self.assertEqual(desired.status(webapp, 2), webapp.status)

    def test_absent_spec_fields_take_the_crd_defaults(self):
        spec = WebApp(spec={"image": "nginx"}).settings()
        self.assertEqual((spec.replicas, spec.port), (1, 8080))


if __name__ == "__main__":
    unittest.main()
