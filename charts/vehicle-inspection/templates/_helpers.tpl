{{- define "vi.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "vi.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else if contains (include "vi.name" .) .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name (include "vi.name" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "vi.selectorLabels" -}}
app.kubernetes.io/name: {{ include "vi.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "vi.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "vi.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "vi.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "vi.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "vi.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{/* Where NATS and S3 are, for the service and the detection Jobs' pods alike. */}}
{{- define "vi.sharedEnv" -}}
{{- with .Values.nats.url }}
- { name: NATS_URL, value: {{ . | quote }} }
{{- end }}
{{- with .Values.s3.bucket }}
- { name: S3_BUCKET, value: {{ . | quote }} }
- { name: S3_REGION, value: {{ $.Values.s3.region | quote }} }
- { name: S3_FORCE_PATH_STYLE, value: {{ $.Values.s3.forcePathStyle | quote }} }
{{- with $.Values.s3.endpoint }}
- { name: S3_ENDPOINT, value: {{ . | quote }} }
{{- end }}
{{- end }}
{{- end -}}

{{- define "vi.sharedEnvFrom" -}}
{{- with .Values.s3.credentialsSecret }}
envFrom:
  - secretRef:
      name: {{ . }}
{{- end }}
{{- end -}}

{{/* The service account of a cluster-mode workload: the release's name and the workload's. */}}
{{- define "vi.workloadAccount" -}}
{{- printf "%s-%s" (include "vi.fullname" .root) .workload | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* What every workload of the service is told, embedded or cluster: where it listens, its URL, its limits. */}}
{{- define "vi.serviceEnv" -}}
- { name: PORT, value: "8080" }
- { name: METRICS_PORT, value: {{ .Values.metrics.port | quote }} }
- { name: DATA_DIR, value: /data }
- { name: PUBLIC_URL, value: {{ required "publicUrl is required: the base URL customers and clients reach the service at" .Values.publicUrl | quote }} }
- { name: RATE_LIMIT_LIVE_PER_SECOND, value: {{ .Values.rateLimit.livePerSecond | quote }} }
- { name: RATE_LIMIT_TEST_PER_SECOND, value: {{ .Values.rateLimit.testPerSecond | quote }} }
- { name: WEBHOOKS_ALLOW_PRIVATE_TARGETS, value: {{ .Values.webhooks.allowPrivateTargets | quote }} }
- { name: DETECTION_THREADS, value: {{ .Values.detection.threads | quote }} }
- { name: ONNX_PROVIDER, value: {{ .Values.detection.provider | quote }} }
- { name: LOG_LEVEL, value: {{ .Values.logLevel | quote }} }
{{ include "vi.sharedEnv" . }}
{{- if eq .Values.mode "cluster" }}
- { name: INSPECTION_STORE, value: kubernetes }
- { name: INSPECTION_RESOURCES_RETENTION_SECONDS, value: {{ mul .Values.inspectionResources.retentionHours 3600 | quote }} }
{{- end }}
{{- end -}}

{{/* The namespace, from the downward API: where the Inspection resources, the Lease and the Jobs are. */}}
{{- define "vi.podNamespace" -}}
- name: POD_NAMESPACE
  valueFrom:
    fieldRef: { fieldPath: metadata.namespace }
{{- end -}}

{{/* Cluster mode needs what its replicas share: NATS for keys and limits, S3 for photos. */}}
{{- define "vi.clusterRequires" -}}
{{- $_ := required "mode=cluster needs nats.url: the replicas share API keys, limits and events through NATS" .Values.nats.url -}}
{{- $_ := required "mode=cluster needs s3.bucket: the replicas share photos and reports through S3" .Values.s3.bucket -}}
{{- end -}}

{{/* Detection as Jobs, made by the workload `owner` (Kind/name) from the chart's template, which it mounts at /etc/vehicle-inspection. */}}
{{- define "vi.detectionJobsEnv" -}}
{{- $jobs := .root.Values.detection.jobs -}}
- { name: DETECTION_JOB_TEMPLATE, value: /etc/vehicle-inspection/detection-job.yaml }
- { name: DETECTION_JOB_OWNER, value: {{ .owner | quote }} }
- { name: DETECTION_JOBS_MIN, value: {{ $jobs.minParallelism | quote }} }
- { name: DETECTION_JOBS_MAX, value: {{ $jobs.maxParallelism | quote }} }
- { name: DETECTION_JOBS_INSPECTIONS_PER_POD, value: {{ $jobs.inspectionsPerPod | quote }} }
- { name: DETECTION_JOBS_STUCK_AFTER_MS, value: {{ mul $jobs.stuckAfterSeconds 1000 | quote }} }
{{- end -}}

{{/*
A checksum of the configuration the pods read from files rather than env (the detection Job
template's ConfigMap), on every pod template: `helm upgrade` of any value then rolls the pods, and
the operator, restarted, makes its new Jobs from the new template.
*/}}
{{- define "vi.configChecksum" -}}
{{- $files := "" -}}
{{- if .Values.detection.jobs.enabled -}}
{{- $files = include (print .Template.BasePath "/detection-job.yaml") . -}}
{{- end -}}
{{- $files | sha256sum -}}
{{- end }}

{{/*
Where every workload's pods may run, from the values they share: one block for the api, operator,
inference and embedded pods alike (the detection Jobs have their own, detection.jobs.*).
*/}}
{{- define "vi.podPlacement" -}}
{{- with .Values.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- with .Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.topologySpreadConstraints }}
topologySpreadConstraints:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/*
The detection Jobs' container env: the Job template renders it, and the Jobs' admission policy
holds every Job to exactly it (detection-job-policy.yaml).
*/}}
{{- define "vi.detectionJobEnv" -}}
{{- $jobs := .Values.detection.jobs -}}
- { name: DATA_DIR, value: /tmp/data }
- { name: METRICS_PORT, value: {{ .Values.metrics.port | quote }} }
- { name: INFERENCE_EXIT_WHEN_IDLE_MS, value: {{ mul $jobs.idleExitSeconds 1000 | quote }} }
- { name: DETECTION_THREADS, value: {{ .Values.detection.threads | quote }} }
- { name: ONNX_PROVIDER, value: {{ ternary "cuda" .Values.detection.provider (gt (int $jobs.gpus) 0) | quote }} }
- { name: LOG_LEVEL, value: {{ .Values.logLevel | quote }} }
{{- with include "vi.sharedEnv" . | trim }}
{{ . }}
{{- end }}
{{- end -}}

{{/* The detection Jobs' pods' own service account (no Kubernetes API; annotatable for a cloud identity). */}}
{{- define "vi.detectionAccount" -}}
{{- printf "%s-detection" (include "vi.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The image the detection Jobs run. */}}
{{- define "vi.detectionImage" -}}
{{- $jobs := .Values.detection.jobs -}}
{{- printf "%s:%s" ($jobs.image.repository | default .Values.image.repository) ($jobs.image.tag | default (.Values.image.tag | default .Chart.AppVersion)) -}}
{{- end -}}

{{/* The service account that makes the detection Jobs: the embedded service's, or the operator's. */}}
{{- define "vi.jobMaker" -}}
{{- if eq .Values.mode "cluster" -}}
{{- include "vi.workloadAccount" (dict "root" . "workload" "operator") -}}
{{- else -}}
{{- include "vi.serviceAccountName" . -}}
{{- end -}}
{{- end -}}

{{/*
A container's env: the chart's (`chart`, a YAML list) with each extraEnv entry in place of the
chart's of the same name, then extraEnv's other entries (the last of a name where it repeats one).
Server-side apply, which Helm 4 uses, keys env by name and refuses a list naming one twice, so an
extraEnv of a variable the chart sets would break `helm upgrade`; here the user's value wins.
*/}}
{{- define "vi.env" -}}
{{- $extra := .root.Values.extraEnv | default list -}}
{{- $byName := dict -}}
{{- range $extra }}{{ $_ := set $byName .name . }}{{ end -}}
{{- $out := list -}}
{{- $placed := dict -}}
{{- range fromYamlArray .chart -}}
{{- $out = append $out (get $byName .name | default .) -}}
{{- $_ := set $placed .name true -}}
{{- end -}}
{{- range $extra -}}
{{- if not (hasKey $placed .name) -}}
{{- $out = append $out (get $byName .name) -}}
{{- $_ := set $placed .name true -}}
{{- end -}}
{{- end -}}
{{- toYaml $out -}}
{{- end -}}

{{/*
A CEL condition that `at`.securityContext's `fields` (dotted paths) are what `values` (the values'
securityContext) sets: equal where it sets one, absent (or at `defaults`' value, what the API server
fills in) where it does not. For the detection Job policy.
*/}}
{{- define "vi.celPinned" -}}
{{- $out := list -}}
{{- $parents := dict -}}
{{- range .fields -}}
{{- $field := . -}}
{{- $parent := splitList "." $field | first -}}
{{- $want := include "vi.celWant" (dict "values" $.values "field" $field) -}}
{{- $path := printf "%s.?securityContext.?%s" $.at (splitList "." $field | join ".?") -}}
{{- if $want -}}
{{- $out = append $out (printf "%s == optional.of(%s)" $path $want) -}}
{{- else if hasKey ($.defaults | default dict) $field -}}
{{- $out = append $out (printf "%s.orValue(%s) == %s" $path (get $.defaults $field | toJson) (get $.defaults $field | toJson)) -}}
{{- else if not (include "vi.celWant" (dict "values" $.values "field" $parent)) -}}
{{- if not (hasKey $parents $parent) -}}
{{- $out = append $out (printf "!%s.?securityContext.?%s.hasValue()" $.at $parent) -}}
{{- $_ := set $parents $parent true -}}
{{- end -}}
{{- else -}}
{{- $out = append $out (printf "!%s.hasValue()" $path) -}}
{{- end -}}
{{- end -}}
{{- join " && " $out -}}
{{- end -}}

{{/* What vi.celPinned holds `fields` to, for a message: "field value" for each the values set, or "fields unset". */}}
{{- define "vi.celShown" -}}
{{- $out := list -}}
{{- range .fields -}}
{{- $field := . -}}
{{- with include "vi.celWant" (dict "values" $.values "field" $field) -}}
{{- $out = append $out (printf "%s %s" $field . | replace "\"" "") -}}
{{- end -}}
{{- end -}}
{{- join ", " $out | default (printf "%s unset" (join ", " .fields)) -}}
{{- end -}}

{{/* The value (JSON) that `values` sets at the dotted path `field`; empty where it sets none. */}}
{{- define "vi.celWant" -}}
{{- $want := .values -}}
{{- range splitList "." .field -}}
{{- $want = and (kindIs "map" $want) (hasKey $want .) | ternary (index (kindIs "map" $want | ternary $want dict) .) nil -}}
{{- end -}}
{{- if not (kindIs "invalid" $want) }}{{ toJson $want }}{{ end -}}
{{- end -}}
