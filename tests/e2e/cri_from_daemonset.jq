# The CRI view of the DaemonSet's agent container: what a kubelet asks the container runtime
# for (CRI runtime.v1 LinuxContainerSecurityContext and Mounts), so a test that runs the agent
# image under containerd with crictl confines it exactly as the manifest says, instead of
# restating it. Input: the objects of a manifest as tests/k8svalidate -json writes them
# (one a line; run jq with -s). Output:
#   {"security_context": {...}, "mounts": [...], "secrets": [...], "args": [...], "probe": [...]}
# security_context follows the kubelet's mapping: runAsUser -> run_as_user, a read-only root,
# allowPrivilegeEscalation false -> no_new_privs, capabilities as named (the runtime adds the
# CAP_ prefix), the container's or else the pod's seccomp profile (RuntimeDefault is
# profile_type 0), hostPID -> the node's pid namespace (NamespaceMode NODE = 2); the network
# namespace is the caller's to choose. Mounts: hostPath volumes with their read-only flag and
# propagation (HostToContainer is PROPAGATION_HOST_TO_CONTAINER = 1). secrets: where the
# Secret volumes go, for the caller to fill (a kubelet writes their files there). probe: the
# liveness probe's exec command, for the caller to run in the container as a kubelet would.
map(select(.kind == "DaemonSet"))[0].spec.template.spec as $pod
| $pod.containers[0] as $c
| ($pod.volumes | map({key: .name, value: .hostPath.path}) | from_entries) as $host
| {
    security_context: {
      run_as_user: {value: $c.securityContext.runAsUser},
      readonly_rootfs: ($c.securityContext.readOnlyRootFilesystem == true),
      no_new_privs: ($c.securityContext.allowPrivilegeEscalation == false),
      privileged: ($c.securityContext.privileged == true),
      capabilities: {
        add_capabilities: ($c.securityContext.capabilities.add // []),
        drop_capabilities: ($c.securityContext.capabilities.drop // [])
      },
      seccomp: {profile_type: ({RuntimeDefault: 0, Unconfined: 1, Localhost: 2}[
        ($c.securityContext.seccompProfile // $pod.securityContext.seccompProfile // {type: "Unconfined"}).type])},
      namespace_options: {pid: (if $pod.hostPID then 2 else 0 end)}
    },
    mounts: [$c.volumeMounts[] | select($host[.name] != null) | {
      container_path: .mountPath, host_path: $host[.name], readonly: (.readOnly == true),
      propagation: ({HostToContainer: 1, Bidirectional: 2}[.mountPropagation // "None"] // 0)
    }],
    secrets: [$c.volumeMounts[] | . as $m | ($pod.volumes[] | select(.name == $m.name) | .secret.secretName // empty) as $s
      | {container_path: $m.mountPath, secret: $s}],
    args: $c.args,
    probe: $c.livenessProbe.exec.command
  }
