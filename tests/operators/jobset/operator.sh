# JobSet's JobSet controller (sigs.k8s.io/jobset v0.12.0, pkg/controllers): its integration suite,
# test/integration/controller (the specs of jobset_controller_test.go; the suite's manager also ran
# the exclusive-placement Pod controller, which no spec exercises: it creates no Pod). Read by
# ../run.
module=sigs.k8s.io/jobset
tests=test/integration/controller
plugin=jobset
# The specs that passed when known-failures was last written: fewer is a regression.
expected_passed=61
