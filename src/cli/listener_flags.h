// The command-line options of the agents' HTTP listener
// (agent/common/http_listener.h), shared by serve and push's --metrics-listen.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "agent/common/http_listener.h"

namespace goheap2pprof {

// Adds --allowed-host, the --tls-* files and the connection limits; what
// names the listener in the help ("" for serve's --listen). with_pool adds
// --handler-threads and --handler-queue (only serve has blocking handlers).
inline void AddListenerOptions(CLI::App& app, std::vector<std::string>& allowed_hosts,
                               TlsFiles& tls, ListenerLimits& limits, const std::string& what,
                               bool with_pool) {
  app.add_option("--allowed-host", allowed_hosts,
                 "on a loopback listener" + what +
                     ", a Host header (name or name:port) accepted besides the listen address, "
                     "localhost and IP literals; others get 421 (DNS rebinding) (repeatable)");
  app.add_option("--tls-cert-file", tls.cert_file,
                 "serve HTTPS" + what + " with this PEM certificate chain");
  app.add_option("--tls-key-file", tls.key_file, "the PEM private key of --tls-cert-file");
  app.add_option("--tls-client-ca-file", tls.client_ca_file,
                 "require client certificates signed by these PEM CAs (mutual TLS)");
  app.add_option("--max-connections", limits.max_connections,
                 "open connections" + what + "; more are answered 503 and closed")
      ->capture_default_str();
  app.add_option("--max-connections-per-address", limits.max_connections_per_address,
                 "open connections" + what + " from one client address")
      ->capture_default_str();
  app.add_option("--header-timeout", limits.header_timeout_seconds,
                 "seconds from a connection (or a request's first byte) to its whole request "
                 "head, TLS handshake included")
      ->capture_default_str();
  app.add_option("--idle-timeout", limits.idle_timeout_seconds,
                 "seconds a keep-alive connection may wait for its next request")
      ->capture_default_str();
  app.add_option("--write-timeout", limits.write_timeout_seconds, "seconds to write one reply")
      ->capture_default_str();
  if (!with_pool) return;
  app.add_option("--handler-threads", limits.handler_threads,
                 "requests that wait for a capture, served at once")
      ->capture_default_str();
  app.add_option("--handler-queue", limits.handler_queue,
                 "requests waiting for a handler thread; more get 503 with Retry-After")
      ->capture_default_str();
}

}  // namespace goheap2pprof
