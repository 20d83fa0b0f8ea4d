{{/* The release's full name: the release name, with the chart's unless it holds it. */}}
{{- define "airlock.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "airlock.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: publisher
{{- end -}}

{{- define "airlock.labels" -}}
{{ include "airlock.selectorLabels" . }}
app.kubernetes.io/part-of: airlock
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "airlock.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "airlock.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "airlock.image" -}}
{{- $repository := required "image.repository is required: the image hack/image.sh builds" .Values.image.repository -}}
{{- $tag := default .Chart.AppVersion .Values.image.tag -}}
{{- if .Values.image.digest -}}
{{- printf "%s:%s@%s" $repository $tag .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" $repository $tag -}}
{{- end -}}
{{- end -}}

{{/* The --key value: the mounted key file, or the PKCS#11 URI. */}}
{{- define "airlock.key" -}}
{{- $s := .Values.signing -}}
{{- if and $s.secretName $s.pkcs11.uri -}}
{{- fail "signing: give either secretName or pkcs11.uri, not both" -}}
{{- else if $s.secretName -}}
{{- printf "/etc/airlock/key/%s" $s.keyFile -}}
{{- else if $s.pkcs11.uri -}}
{{- if not (hasPrefix "pkcs11:" $s.pkcs11.uri) -}}
{{- fail "signing.pkcs11.uri must start with pkcs11:" -}}
{{- end -}}
{{- $s.pkcs11.uri -}}
{{- else -}}
{{- fail "signing: give secretName (a Secret with the key file) or pkcs11.uri" -}}
{{- end -}}
{{- end -}}
