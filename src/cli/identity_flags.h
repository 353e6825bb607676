// The command-line options of the agents' Kubernetes identity
// (agent/pod_identity.h), shared by serve, push and watch.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace goheap2pprof {

// --host-root: where the node's filesystem is mounted when the agent runs in
// a container (the runtimes' bundles are read below it); --node-name: the
// node label (else $NODE_NAME, which a DaemonSet sets from the downward API).
inline void AddIdentityOptions(CLI::App& app, std::string& host_root, std::string& node_name) {
  app.add_option("--host-root", host_root,
                 "the node's root filesystem, where the container runtimes' state "
                 "(/run/containerd, /run/containers) is read for pod names")
      ->capture_default_str();
  app.add_option("--node-name", node_name,
                 "the node label of every process (default: $NODE_NAME, if set)");
}

}  // namespace goheap2pprof
