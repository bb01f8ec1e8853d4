# Kueue's failure-recovery controller (v0.17.0, pkg/controller/failurerecovery): its integration
# suite, test/integration/singlecluster/controller/failurerecovery. Read by ../run.
module=sigs.k8s.io/kueue
tests=test/integration/singlecluster/controller/failurerecovery
plugin=failurerecovery
expected_passed=2

# The suite's framework reads Kueue's CRDs from config/components/crd/_output, which Kueue's
# `make compile-crd-manifests` writes (kustomize over bases/, adding conversion webhooks served by
# Kueue's own webhook server, which this suite does not run): the bases, as they are.
prepare() {
  local crds="$1/config/components/crd"
  mkdir -p "$crds/_output"
  for crd in "$crds"/bases/*.yaml; do
    printf -- '---\n'
    cat "$crd"
  done > "$crds/_output/crds.yaml"
}
