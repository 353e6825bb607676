#include "cli/probe_main.h"

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <memory>

#include "agent/common/http_listener.h"
#include "agent/push/curl_library.h"
#include "base/error.h"

namespace goheap2pprof {
namespace {

struct ProbeOptions {
  std::string url;
  std::string token_file;
  std::string cert_file;
  std::string key_file;
  std::string ca_file;
  bool insecure_skip_verify = false;
  std::chrono::milliseconds timeout{5'000};
};

// The answer's body is not needed: dropped as it arrives (the timeout bounds
// how long that may take).
size_t DropBody(char* /*data*/, size_t size, size_t count, void* /*user*/) { return size * count; }

void SetTls(const CurlLibrary& lib, CURL* h, const ProbeOptions& o) {
  if (o.insecure_skip_verify) {
    lib.easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
    lib.easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
  } else if (!o.ca_file.empty()) {
    lib.easy_setopt(h, CURLOPT_CAINFO, o.ca_file.c_str());
    lib.easy_setopt(h, CURLOPT_CAPATH, nullptr);
  }
  if (!o.cert_file.empty()) {
    lib.easy_setopt(h, CURLOPT_SSLCERT, o.cert_file.c_str());
    lib.easy_setopt(h, CURLOPT_SSLKEY, o.key_file.c_str());
  }
}

int RunProbe(const ProbeOptions& o) {
  const std::string url = ExpandEnvironmentReferences(o.url);
  const bool https = url.starts_with("https://");
  if (!https && !url.starts_with("http://")) {
    throw Error(ErrorKind::kUsage, "probe ", url, ": the URL must start with http:// or https://");
  }
  if (!https && !o.token_file.empty()) {
    throw Error(ErrorKind::kUsage, "probe ", url,
                ": refusing to send the token over plain HTTP (use https://)");
  }
  const CurlLibrary& lib = Curl();
  std::unique_ptr<CURL, void (*)(CURL*)> h(lib.easy_init(), lib.easy_cleanup);
  if (!h) throw Error(ErrorKind::kInternal, "curl_easy_init failed");
  const long timeout_ms = static_cast<long>(o.timeout.count());
  lib.easy_setopt(h.get(), CURLOPT_URL, url.c_str());
  lib.easy_setopt(h.get(), CURLOPT_PROTOCOLS_STR, "http,https");
  lib.easy_setopt(h.get(), CURLOPT_NOSIGNAL, 1L);
  lib.easy_setopt(h.get(), CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
  lib.easy_setopt(h.get(), CURLOPT_TIMEOUT_MS, timeout_ms);
  lib.easy_setopt(h.get(), CURLOPT_WRITEFUNCTION, &DropBody);
  SetTls(lib, h.get(), o);
  std::unique_ptr<curl_slist, void (*)(curl_slist*)> headers(nullptr, lib.slist_free_all);
  if (!o.token_file.empty()) {
    const std::string line = "Authorization: Bearer " + ReadTokenFile(o.token_file);
    headers.reset(lib.slist_append(nullptr, line.c_str()));
    lib.easy_setopt(h.get(), CURLOPT_HTTPHEADER, headers.get());
  }
  const CURLcode rc = lib.easy_perform(h.get());
  if (rc != CURLE_OK) {
    throw Error(ErrorKind::kIo, "probe ", url, ": ", lib.easy_strerror(rc))
        .WithHint("is the agent running and listening there? Its log says why not");
  }
  long status = 0;
  lib.easy_getinfo(h.get(), CURLINFO_RESPONSE_CODE, &status);
  if (status < 200 || status > 299) {
    throw Error(ErrorKind::kIo, "probe ", url, ": the listener answered ", status)
        .WithHint(status == 401 ? "the token or client certificate is not the listener's"
                                : "the agent's log says why");
  }
  return 0;
}

}  // namespace

std::string ExpandEnvironmentReferences(std::string_view url) {
  std::string out;
  while (!url.empty()) {
    const size_t at = url.find("$(");
    const size_t end = at == std::string_view::npos ? at : url.find(')', at);
    if (end == std::string_view::npos) break;
    out.append(url.substr(0, at));
    const std::string name(url.substr(at + 2, end - at - 2));
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) {
      throw Error(ErrorKind::kUsage, "probe: $(", name, ") in the URL: the variable is not set");
    }
    out.append(value);
    url.remove_prefix(end + 1);
  }
  out.append(url);
  return out;
}

Command AddProbeCommand(CLI::App& root) {
  CLI::App& app = *root.add_subcommand(
      "probe",
      "goheap2pprof probe: GET a URL of the agent's listener and exit 0 only for a 2xx answer, "
      "for a Kubernetes exec probe (the chart's). $(NAME) in the URL is replaced by the "
      "environment variable NAME, as Kubernetes does for a container's arguments.\n"
      "  goheap2pprof probe 'https://$(POD_IP):6061/metrics' --insecure-skip-verify "
      "--token-file /etc/goheap2pprof/token/token");
  app.footer("Exit codes: 0 a 2xx answer; 9 no answer or another status; 2 a bad command line.");
  auto shared = std::make_shared<ProbeOptions>();
  ProbeOptions& o = *shared;
  app.add_option("url", o.url, "the URL, http:// or https://")->required();
  app.add_option("--token-file", o.token_file,
                 "send Authorization: Bearer <the file's first line> (https only)");
  app.add_option("--cert-file", o.cert_file, "client certificate (PEM), for mutual TLS");
  app.add_option("--key-file", o.key_file, "its private key (PEM)");
  CLI::Option* ca = app.add_option("--ca-file", o.ca_file,
                                   "verify the server's certificate against this CA (PEM)");
  app.add_flag("--insecure-skip-verify", o.insecure_skip_verify,
               "do not verify the server's certificate: for the pod's own address, dialled "
               "from inside the pod's network namespace, where no one else can answer")
      ->excludes(ca);
  AddDurationOption(app, "--timeout", o.timeout, "give up after this long")->capture_default_str();
  return {&app, [shared] {
            if (shared->cert_file.empty() != shared->key_file.empty()) {
              throw Error(ErrorKind::kUsage, "--cert-file and --key-file go together");
            }
            return RunProbe(*shared);
          }};
}

}  // namespace goheap2pprof
