{{- define "vi.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "vi.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
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
