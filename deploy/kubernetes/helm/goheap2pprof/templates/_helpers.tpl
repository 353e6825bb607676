{{/* Names: the release's, cut to the 63 characters a label value allows. */}}
{{- define "goheap2pprof.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "goheap2pprof.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "goheap2pprof.labels" -}}
{{ include "goheap2pprof.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/component: node-agent
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "goheap2pprof.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "goheap2pprof.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/*
The container's memory limit in MiB, from the limits the agent enforces itself (values.yaml,
"workers"): every worker at its address-space cap, two gzipped profiles per running capture,
the agent's own memory, and push's queue when pushing.
*/}}
{{- define "goheap2pprof.memoryLimitMiB" -}}
{{- $w := .Values.workers -}}
{{- $perWorker := add $w.memoryMiB (mul 2 $w.maxCaptureMiB) -}}
{{- $mib := add (mul $w.count $perWorker) .Values.baseMiB -}}
{{- if or .Values.push.pyroscope .Values.push.parca -}}
{{- $mib = add $mib .Values.push.queueMiB -}}
{{- end -}}
{{- $mib -}}
{{- end -}}

{{- define "goheap2pprof.insecure" -}}
{{- if not .Values.listener.tlsSecret -}}true{{- end -}}
{{- end -}}
