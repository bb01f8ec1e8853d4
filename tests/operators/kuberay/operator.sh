# KubeRay's RayCluster controller (ray-operator v1.5.0, controllers/ray): the Ginkgo specs of
# raycluster_controller_test.go (the package's RayJob and RayService specs need their own
# controllers, which the suite's manager also ran; its plain unit tests are not run). Read by ../run.
module=github.com/ray-project/kuberay/ray-operator
tests=controllers/ray
plugin=kuberay
spec_file=raycluster_controller_test.go
# The specs that passed when known-failures was last written: fewer is a regression.
expected_passed=47
