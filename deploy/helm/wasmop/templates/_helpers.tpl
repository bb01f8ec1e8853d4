{{/* The labels every object of the release carries. */}}
{{- define "wasmop.labels" -}}
app.kubernetes.io/name: wasmop
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end }}

{{/* The pods' labels, which the Deployment, Services, PDB and NetworkPolicy select (unchanged
since 0.1.0: a Deployment's selector cannot change on upgrade). */}}
{{- define "wasmop.selector" -}}
app.kubernetes.io/name: wasmop
{{- end }}

{{/* A Kubernetes memory quantity (128Mi, 1Gi, 500M, 268435456) in bytes, as an integer. */}}
{{- define "wasmop.bytes" -}}
{{- $q := toString . -}}
{{- $units := dict "Ki" 1024 "Mi" 1048576 "Gi" 1073741824 "Ti" 1099511627776 "k" 1000 "M" 1000000 "G" 1000000000 "T" 1000000000000 -}}
{{- $unit := regexFind "[A-Za-z]+$" $q -}}
{{- $number := trimSuffix $unit $q -}}
{{- if not (regexMatch "^[0-9]+$" $number) -}}
{{- fail (printf "%q is not a memory quantity this chart reads (an integer with Ki, Mi, Gi, Ti, k, M, G or T)" $q) -}}
{{- end -}}
{{- if and $unit (not (hasKey $units $unit)) -}}
{{- fail (printf "%q has an unknown unit %q" $q $unit) -}}
{{- end -}}
{{- mul (int64 $number) (ternary (index $units $unit) 1 (ne $unit "")) -}}
{{- end }}

{{/* Fails unless the guest memory budget and the host's headroom fit the pod's memory limit. */}}
{{- define "wasmop.checkMemory" -}}
{{- $limit := dig "limits" "memory" "" .Values.resources -}}
{{- if $limit -}}
{{- $budget := include "wasmop.bytes" .Values.guestMemoryBudget | int64 -}}
{{- $headroom := include "wasmop.bytes" .Values.hostMemoryHeadroom | int64 -}}
{{- $bytes := include "wasmop.bytes" $limit | int64 -}}
{{- if gt (add $budget $headroom) $bytes -}}
{{- fail (printf "guestMemoryBudget (%s) plus hostMemoryHeadroom (%s) is more than resources.limits.memory (%s): the pod would be OOMKilled before a guest trapped at the budget; raise the limit or lower the budget" (toString .Values.guestMemoryBudget) (toString .Values.hostMemoryHeadroom) (toString $limit)) -}}
{{- end -}}
{{- end -}}
{{- $memoryLimit := include "wasmop.bytes" .Values.memoryLimit | int64 -}}
{{- if gt $memoryLimit (include "wasmop.bytes" .Values.guestMemoryBudget | int64) -}}
{{- fail (printf "memoryLimit (%s) is more than guestMemoryBudget (%s): no plugin could load" (toString .Values.memoryLimit) (toString .Values.guestMemoryBudget)) -}}
{{- end -}}
{{- end }}

{{/* Fails when the cache volume cannot hold the compile cache and the pulled store at their
limits beside the installs in flight (each a 64 MiB module and a 256 MiB precompiled layer):
past its sizeLimit the kubelet evicts the pod. */}}
{{- define "wasmop.checkCache" -}}
{{- $size := include "wasmop.bytes" .Values.cache.sizeLimit | int64 -}}
{{- $compiled := include "wasmop.bytes" .Values.cache.compiledLimit | int64 -}}
{{- $pulled := include "wasmop.bytes" .Values.cache.pulledLimit | int64 -}}
{{- $inFlight := mul (int64 .Values.tenants.maxConcurrentInstalls) 335544320 -}}
{{- if gt (add $compiled $pulled $inFlight) $size -}}
{{- fail (printf "cache.compiledLimit (%s) plus cache.pulledLimit (%s) plus 320Mi for each of tenants.maxConcurrentInstalls (%d) is more than cache.sizeLimit (%s): a full cache would get the pod evicted; raise the size or lower the limits" (toString .Values.cache.compiledLimit) (toString .Values.cache.pulledLimit) (int .Values.tenants.maxConcurrentInstalls) (toString .Values.cache.sizeLimit)) -}}
{{- end -}}
{{- end }}

{{/* Fails when the host would have no plugin to load. */}}
{{- define "wasmop.checkPlugins" -}}
{{- if not (or .Values.plugins.files .Values.plugins.wasmReconcilers .Values.plugins.directory.enabled) -}}
{{- fail "plugins: set files, wasmReconcilers or directory.enabled: the host needs a plugin to load" -}}
{{- end -}}
{{- if and .Values.plugins.directory.enabled (not .Values.plugins.directory.volume) -}}
{{- fail "plugins.directory.volume: a volume source holding the plugins, e.g. {persistentVolumeClaim: {claimName: plugins}}" -}}
{{- end -}}
{{- if and .Values.sharding (lt (int .Values.replicaCount) 2) -}}
{{- fail "sharding shares the work among replicas: set replicaCount to 2 or more" -}}
{{- end -}}
{{- end }}

{{/* Fails when `config` sets a key the chart sets from a value of its own (a key twice in the
host's settings file is an error there), naming that value. */}}
{{- define "wasmop.checkConfig" -}}
{{- $own := dict "leader-elect" "(always on)" "sharding" "sharding" "warm-standby" "warmStandby" "wasm-reconcilers" "plugins.wasmReconcilers" "compile-cache" "(the cache volume)" "metrics-secure" "metrics.secure" "metrics-bind-address" "metrics.port" "metrics-cert-dir" "metrics.certSecret" "health-probe-bind-address" "(the probes port)" "guest-memory-budget" "guestMemoryBudget" "memory-limit" "memoryLimit" "policy" "policy" "graceful-shutdown-timeout" "gracefulShutdownTimeout" "plugin-identity-namespace" "identity.perPlugin" "plugin-dir" "plugins.directory" "plugins" "plugins.files" "compile-cache-limit" "cache.compiledLimit" "pulled-store-limit" "cache.pulledLimit" "max-concurrent-installs" "tenants.maxConcurrentInstalls" "max-concurrent-compiles" "tenants.maxConcurrentCompiles" "tenant-log-rate" "tenants.logRate" "operator-reserved-instances" "tenants.operatorReservedInstances" "operator-reserved-memory" "tenants.operatorReservedMemory" -}}
{{- range $key, $_ := .Values.config -}}
{{- if hasKey $own $key -}}
{{- fail (printf "config.%s: the chart sets %s from %s; set that instead" $key $key (index $own $key)) -}}
{{- end -}}
{{- end -}}
{{- end }}
