# External Secrets' ClusterExternalSecret controller (v0.16.2): its package's envtest suite, every
# spec. Read by ../run.
module=github.com/external-secrets/external-secrets
tests=pkg/controllers/clusterexternalsecret
plugin=clusterexternalsecret
expected_passed=11
