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

{{/* Plain HTTP: only when asked for (listener.insecure). */}}
{{- define "goheap2pprof.insecure" -}}
{{- if .Values.listener.insecure -}}true{{- end -}}
{{- end -}}

{{/* The Secrets of the listener: the ones named, else the ones the chart makes. */}}
{{- define "goheap2pprof.tlsSecret" -}}
{{- .Values.listener.tlsSecret | default (printf "%s-tls" (include "goheap2pprof.fullname" .)) -}}
{{- end -}}
{{- define "goheap2pprof.tokenSecret" -}}
{{- .Values.listener.tokenSecret | default (printf "%s-token" (include "goheap2pprof.fullname" .)) -}}
{{- end -}}

{{/*
The combinations that would leave the listener open or leak its token fail the render, naming
the value to change: a token over plain HTTP, client certificates without TLS, TLS without
any client authentication, probes that could not authenticate, and a NetworkPolicy whose
empty "from" admits every pod.
*/}}
{{- define "goheap2pprof.validate" -}}
{{- $l := .Values.listener -}}
{{- if $l.insecure -}}
{{- if $l.tokenSecret -}}
{{- fail "listener.tokenSecret with listener.insecure: the bearer token would cross the network in clear text. Drop listener.insecure (the chart then serves HTTPS), or drop the token" -}}
{{- end -}}
{{- if or $l.clientCA.secret $l.clientCA.configMap -}}
{{- fail "listener.clientCA with listener.insecure: client certificates need TLS. Drop listener.insecure" -}}
{{- end -}}
{{- else -}}
{{- $mutual := or $l.clientCA.secret $l.clientCA.configMap -}}
{{- if and $l.clientCA.secret $l.clientCA.configMap -}}
{{- fail "listener.clientCA: give a secret or a configMap, not both" -}}
{{- end -}}
{{- if and (not $l.token) (not $mutual) -}}
{{- fail "listener.token is false and no listener.clientCA is given: TLS alone authenticates no one. Keep the token, or give the CA of the client certificates" -}}
{{- end -}}
{{- if and $mutual (not $l.probeClientSecret) -}}
{{- fail "listener.clientCA requires listener.probeClientSecret: a kubernetes.io/tls Secret with a client certificate that CA signed, for the probes" -}}
{{- end -}}
{{- end -}}
{{- if and .Values.networkPolicy.enabled (not .Values.networkPolicy.from) -}}
{{- fail "networkPolicy.enabled with an empty networkPolicy.from would admit every pod: list the namespaces or pods that may connect (e.g. a namespaceSelector for your monitoring namespace)" -}}
{{- end -}}
{{- end -}}

{{/*
The probes' command: `goheap2pprof probe` GETs /metrics from the listener inside the pod, with
the token and client certificate the scrapers use. It dials the pod's own address from inside
the pod's network namespace, where no one else can answer: it does not verify the server's
certificate (which names the Service, not the pod's IP).
*/}}
{{- define "goheap2pprof.probeCommand" -}}
- /goheap2pprof
- probe
{{- if include "goheap2pprof.insecure" . }}
- http://{{ .Values.listen }}/metrics
{{- else }}
- https://{{ .Values.listen }}/metrics
- --insecure-skip-verify
{{- if .Values.listener.token }}
- --token-file=/etc/goheap2pprof/token/token
{{- end }}
{{- if .Values.listener.probeClientSecret }}
- --cert-file=/etc/goheap2pprof/probe/tls.crt
- --key-file=/etc/goheap2pprof/probe/tls.key
{{- end }}
{{- end }}
{{- end -}}


{{/* A probe's action: (list <root context> <probe path or "">). */}}
{{- define "goheap2pprof.probe" -}}
{{- $ := index . 0 -}}
{{- with index . 1 -}}
httpGet:
  path: {{ . }}
  port: http
  scheme: {{ if include "goheap2pprof.insecure" $ }}HTTP{{ else }}HTTPS{{ end }}
{{- else -}}
exec:
  command:
    {{- include "goheap2pprof.probeCommand" $ | nindent 4 }}
{{- end -}}
{{- end -}}
