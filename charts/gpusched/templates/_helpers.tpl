{{/*
Names, labels and the image, shared by every template. Every object's name starts with the
fullname, so two releases (or an uninstall) never touch an object another release made;
cluster-scoped objects also carry the namespace.
*/}}

{{- define "gpusched.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* <release>-gpusched, or the release name when it already holds the chart's name */}}
{{- define "gpusched.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 40 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 40 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* a namespaced component's name: (dict "root" $ "c" "scheduler") -> <fullname>-scheduler */}}
{{- define "gpusched.component" -}}
{{- printf "%s-%s" (include "gpusched.fullname" .root) .c | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* a cluster-scoped object's name: <namespace>-<fullname>-<component> */}}
{{- define "gpusched.clusterName" -}}
{{- printf "%s-%s-%s" .root.Release.Namespace (include "gpusched.fullname" .root) .c | trunc 253 | trimSuffix "-" }}
{{- end }}

{{- define "gpusched.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* labels on every object: (dict "root" $ "c" "scheduler"); c may be empty */}}
{{- define "gpusched.labels" -}}
helm.sh/chart: {{ include "gpusched.chart" .root }}
{{ include "gpusched.selectorLabels" . }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
app.kubernetes.io/part-of: gpusched
{{- with .root.Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* what a workload's selector matches: never changes across upgrades */}}
{{- define "gpusched.selectorLabels" -}}
app.kubernetes.io/name: {{ include "gpusched.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
{{- if .c }}
app.kubernetes.io/component: {{ .c }}
{{- end }}
{{- end }}

{{/* metadata: name, namespace and labels of a namespaced component object */}}
{{- define "gpusched.metadata" -}}
name: {{ include "gpusched.component" . }}
namespace: {{ .root.Release.Namespace }}
labels:
  {{- include "gpusched.labels" . | nindent 2 }}
{{- end }}

{{- define "gpusched.image" -}}
{{- $img := .Values.image }}
{{- if $img.digest }}
{{- printf "%s@%s" $img.repository $img.digest }}
{{- else }}
{{- printf "%s:%s" $img.repository (default .Chart.AppVersion $img.tag) }}
{{- end }}
{{- end }}

{{/* the container security context of the scheduler, extender and kube-scheduler */}}
{{- define "gpusched.restrictedContainer" -}}
securityContext:
  allowPrivilegeEscalation: false
  readOnlyRootFilesystem: true
  runAsNonRoot: true
  capabilities: {drop: [ALL]}
{{- end }}

{{/* preferred anti-affinity on the hostname for a component's replicas, unless affinity is set */}}
{{- define "gpusched.affinity" -}}
affinity:
{{- if .affinity }}
  {{- toYaml .affinity | nindent 2 }}
{{- else }}
  podAntiAffinity:
    preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 100
        podAffinityTerm:
          topologyKey: kubernetes.io/hostname
          labelSelector:
            matchLabels:
              {{- include "gpusched.selectorLabels" . | nindent 14 }}
{{- end }}
{{- end }}

{{/* the read-only rules the scheduler and the extender share (deploy/rbac.yaml) */}}
{{- define "gpusched.readRules" -}}
- apiGroups: [""]
  resources: [nodes, pods, resourcequotas]
  verbs: [get, list, watch]
- apiGroups: [""]
  # the volumes a pod's claims name, and the claims
  resources: [persistentvolumeclaims, persistentvolumes]
  verbs: [get, list, watch]
- apiGroups: [storage.k8s.io]
  # classes, CSI capacity and attach limits
  resources: [storageclasses, csidrivers, csistoragecapacities, csinodes]
  verbs: [get, list, watch]
- apiGroups: [resource.k8s.io]
  # DRA: gpusched allocates its pods' ResourceClaims
  resources: [deviceclasses, resourceslices, resourceclaims, devicetaintrules]
  verbs: [get, list, watch]
- apiGroups: [resource.k8s.io]
  # binding: the permission the API server asks to set status.allocation and reservedFor
  resources: [resourceclaims/status, resourceclaims/binding]
  verbs: [patch, update]
- apiGroups: [resource.k8s.io]
  # create: the claim of a pod's extended resources a DeviceClass backs; patch: the
  # finalizer resource.kubernetes.io/delete-protection, added before an allocation is
  # written and dropped after a release
  resources: [resourceclaims]
  verbs: [create, patch]
- apiGroups: [policy]
  resources: [poddisruptionbudgets]
  verbs: [get, list, watch]
- apiGroups: [gpusched.io]
  resources: [gpuqueues]
  verbs: [get, list, watch]
- apiGroups: [scheduling.x-k8s.io]
  resources: [podgroups]
  verbs: [get, list, watch]
- apiGroups: [scheduling.k8s.io]
  # the Workload API's gangs (Kubernetes v1.37)
  resources: [podgroups]
  verbs: [get, list, watch]
- apiGroups: [nvidia.com]
  resources: [migmanagers]
  verbs: [get, list, watch]
- apiGroups: [kueue.x-k8s.io]
  # Kueue's Topologies and ResourceFlavors: the levels gangs ask (podset-*-topology)
  resources: [topologies, resourceflavors]
  verbs: [get, list, watch]
- apiGroups: [""]
  resources: [pods/binding, bindings]
  verbs: [create]
- apiGroups: [events.k8s.io]
  resources: [events]
  verbs: [create, patch, update]
{{- end }}

{{/* the three agent ConfigMaps' names */}}
{{- define "gpusched.migConfigName" -}}{{ include "gpusched.component" (dict "root" . "c" "mig-config") }}{{- end }}
{{- define "gpusched.dpConfigName" -}}{{ include "gpusched.component" (dict "root" . "c" "device-plugin-config") }}{{- end }}
{{- define "gpusched.monitorConfigName" -}}{{ include "gpusched.component" (dict "root" . "c" "monitor-config") }}{{- end }}

{{/* a number as the command line wants it: 1000000, not 1e+06 (values are read as floats) */}}
{{- define "gpusched.num" -}}
{{- if eq (float64 .) (float64 (int64 .)) }}{{ int64 . }}{{ else }}{{ . }}{{ end }}
{{- end }}
