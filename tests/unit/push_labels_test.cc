// The series labels of `goheap2pprof push` (agent/push/labels.h) and the
// small pure parts of its delivery (agent/push/sender.h, agent/push/agent.h):
// URLs, backoff, UUIDs.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <regex>
#include <set>

#include "agent/common/service_name.h"
#include "agent/push/agent.h"
#include "agent/push/labels.h"
#include "agent/push/sender.h"
#include "base/error.h"

namespace goheap2pprof {
namespace {

GoProcess Process() {
  GoProcess p;
  p.facts.pid = 4321;
  p.facts.exe = "/usr/local/bin/api-server (deleted)";
  p.facts.comm = "api-server";
  p.facts.cgroup = "/system.slice/api.service";
  p.exe.go_version = "go1.26.8";
  p.exe.is_go = true;
  return p;
}

TEST(PushLabels, PyroscopeSeries) {
  std::vector<PushLabel> labels = PushSeriesLabels(Process(), "exe", {{"env", "prod"}}, true);
  EXPECT_EQ(labels, (std::vector<PushLabel>{{"__delta__", "false"},
                                            {"__name__", "memory"},
                                            {"env", "prod"},
                                            {"go_version", "go1.26.8"},
                                            {"pid", "4321"},
                                            {"service_name", "api-server"}}));
}

TEST(PushLabels, GoroutineSeriesIsNamedGoroutine) {
  std::vector<PushLabel> labels = PushSeriesLabels(Process(), "exe", {}, false, "goroutine");
  EXPECT_EQ(labels, (std::vector<PushLabel>{{"__name__", "goroutine"},
                                            {"go_version", "go1.26.8"},
                                            {"pid", "4321"},
                                            {"service_name", "api-server"}}));
}

TEST(PushLabels, ProfilesOption) {
  PushOptions o;
  o.pyroscope_url = "http://127.0.0.1:4040";
  EXPECT_TRUE(PushesProfile(o, "heap"));
  EXPECT_FALSE(PushesProfile(o, "goroutine"));  // opt-in
  o.profiles = {"heap", "goroutine"};
  EXPECT_NO_THROW(ValidatePushOptions(o));
  EXPECT_TRUE(PushesProfile(o, "goroutine"));
  o.profiles = {"goroutines"};
  EXPECT_THROW(ValidatePushOptions(o), Error);
  o.profiles = {};
  EXPECT_THROW(ValidatePushOptions(o), Error);
}

// A containerd pod's container, its names read from the bundle.
GoProcess PodProcess() {
  GoProcess p = Process();
  PodIdentity& id = p.facts.identity;
  id.cgroup.container_id = std::string(64, 'a');
  id.cgroup.pod_uid = "6d3a2a3c-1b5e-4e6f-9a0b-2c3d4e5f6a7b";
  id.runtime = ContainerRuntime::kContainerd;
  id.names.pod_namespace = "shop";
  id.names.pod = "web-0";
  id.names.container = "api";
  id.node = "node-a";
  return p;
}

TEST(PushLabels, ThePodsIdentityAndItsServiceName) {
  std::vector<PushLabel> labels = PushSeriesLabels(PodProcess(), "auto", {}, false);
  EXPECT_EQ(labels,
            (std::vector<PushLabel>{{"__name__", "memory"},
                                    {"container", "api"},
                                    {"container_id", "containerd://" + std::string(64, 'a')},
                                    {"go_version", "go1.26.8"},
                                    {"namespace", "shop"},
                                    {"node", "node-a"},
                                    {"pid", "4321"},
                                    {"pod", "web-0"},
                                    {"pod_uid", "6d3a2a3c-1b5e-4e6f-9a0b-2c3d4e5f6a7b"},
                                    {"service_name", "shop/api"}}));
  // Every label the agent may set, and the most extras, still fit Pyroscope's limit.
  EXPECT_LE(PushSeriesLabels(PodProcess(), "auto", {}, true).size(), kAgentLabels);
}

TEST(PushLabels, AnExtraLabelOfTheSameNameWins) {
  std::vector<PushLabel> labels = PushSeriesLabels(PodProcess(), "exe", {{"node", "mine"}}, false);
  EXPECT_EQ(std::count(labels.begin(), labels.end(), PushLabel{"node", "mine"}), 1);
  EXPECT_EQ(std::count_if(labels.begin(), labels.end(),
                          [](const PushLabel& l) { return l.first == "node"; }),
            1);
  EXPECT_EQ(std::count(labels.begin(), labels.end(), PushLabel{"service_name", "api-server"}), 1);
}

TEST(PushLabels, AutoServiceNameOfASystemdServiceAndOfAPlainProcess) {
  GoProcess p = Process();
  p.facts.identity = PodIdentityReader("/nonexistent")
                         .Read(ParseCgroupIdentity("0::/system.slice/pay\\x2dments.service\n"));
  EXPECT_EQ(ServiceNameOf(p.facts, "auto"), "pay-ments");
  EXPECT_EQ(ServiceNameOf(Process().facts, "auto"), "api-server");
  EXPECT_NO_THROW(ValidateServiceNameFrom("auto"));
  EXPECT_THROW(ValidateServiceNameFrom("pod"), Error);
}

TEST(PushLabels, ParcaSeriesHasNoDeltaLabel) {
  std::vector<PushLabel> labels = PushSeriesLabels(Process(), "cgroup", {}, false);
  EXPECT_EQ(labels, (std::vector<PushLabel>{{"__name__", "memory"},
                                            {"go_version", "go1.26.8"},
                                            {"pid", "4321"},
                                            {"service_name", "api.service"}}));
}

TEST(PushLabels, EmptyServiceNameIsNeverSent) {
  GoProcess p = Process();
  p.facts.comm = "";
  std::vector<PushLabel> labels = PushSeriesLabels(p, "comm", {}, true);
  EXPECT_NE(std::find(labels.begin(), labels.end(), PushLabel{"service_name", "unknown_service"}),
            labels.end());
}

TEST(PushLabels, ValuesFromTheTargetAreValidUtf8) {
  // A process may name itself any bytes; protobuf strings must be UTF-8.
  GoProcess p = Process();
  p.facts.exe = "/opt/\xff\xfe";
  p.exe.go_version = "go1.26\xc0";
  std::vector<PushLabel> labels = PushSeriesLabels(p, "exe", {}, false);
  EXPECT_EQ(labels, (std::vector<PushLabel>{{"__name__", "memory"},
                                            {"go_version", "go1.26\uFFFD"},
                                            {"pid", "4321"},
                                            {"service_name", "\uFFFD\uFFFD"}}));
}

TEST(PushLabels, LabelNames) {
  EXPECT_TRUE(IsValidLabelName("env"));
  EXPECT_TRUE(IsValidLabelName("_x9"));
  EXPECT_FALSE(IsValidLabelName(""));
  EXPECT_FALSE(IsValidLabelName("9x"));
  EXPECT_FALSE(IsValidLabelName("a-b"));
  EXPECT_FALSE(IsValidLabelName("a.b"));
}

TEST(PushLabels, LabelOptions) {
  EXPECT_EQ(ParseLabelOption("region=eu-west=1"), (PushLabel{"region", "eu-west=1"}));
  for (const char* bad : {"region", "=x", "9a=x", "__name__=cpu", "__delta__=true", "pid=1",
                          "service_name=x", "go_version=x", "env="}) {
    try {
      ParseLabelOption(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kUsage) << bad;
    }
  }
}

TEST(PushLabels, ExtrasMustBeUniqueAndFitPyroscopesLimit) {
  EXPECT_THROW(CheckExtraLabels({{"a", "1"}, {"a", "2"}}), Error);
  std::vector<PushLabel> many;
  for (size_t i = 0; i + kAgentLabels < kMaxLabelsPerSeries; ++i) {
    many.emplace_back("l" + std::to_string(i), "v");
  }
  EXPECT_NO_THROW(CheckExtraLabels(many));
  // A pod's process carries every label the agent sets: exactly the limit.
  EXPECT_EQ(PushSeriesLabels(PodProcess(), "exe", many, true).size(), kMaxLabelsPerSeries);
  many.emplace_back("one_more", "v");
  EXPECT_THROW(CheckExtraLabels(many), Error);
}

TEST(PushDelivery, Urls) {
  ParsedUrl u = ParsePushUrl("https://pyroscope.example:4040/");
  EXPECT_EQ(u.scheme_host_port, "https://pyroscope.example:4040");
  EXPECT_EQ(u.path, "");
  u = ParsePushUrl("http://alloy:9999/prefix/");
  EXPECT_EQ(u.scheme_host_port, "http://alloy:9999");
  EXPECT_EQ(u.path, "/prefix");
  EXPECT_THROW(ParsePushUrl("pyroscope:4040"), Error);
  EXPECT_THROW(ParsePushUrl("ftp://x"), Error);
  EXPECT_THROW(ParsePushUrl("http://"), Error);
  EXPECT_THROW(ParsePushUrl("http://x/a?b=c"), Error);
  EXPECT_EQ(ParcaApiBase("http://parca:7070"), "http://parca:7070/api");
  EXPECT_EQ(ParcaApiBase("http://parca:7070/"), "http://parca:7070/api");
  EXPECT_EQ(ParcaApiBase("https://gw.example/parca/api"), "https://gw.example/parca/api");
}

TEST(PushDelivery, BackoffDoublesUpToTheMaximumWithJitterInTheUpperHalf) {
  EXPECT_DOUBLE_EQ(BackoffSeconds(1, 0.5, 30, 0), 0.25);
  EXPECT_DOUBLE_EQ(BackoffSeconds(1, 0.5, 30, 1), 0.5);
  EXPECT_DOUBLE_EQ(BackoffSeconds(3, 0.5, 30, 1), 2);
  EXPECT_DOUBLE_EQ(BackoffSeconds(3, 0.5, 30, 0.5), 1.5);
  EXPECT_DOUBLE_EQ(BackoffSeconds(20, 0.5, 30, 1), 30);
  EXPECT_DOUBLE_EQ(BackoffSeconds(20, 0.5, 30, 0), 15);
}

TEST(PushDelivery, UuidsAreVersion4AndDistinct) {
  std::regex v4("^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$");
  std::set<std::string> seen;
  for (int i = 0; i < 100; ++i) {
    std::string u = RandomUuid();
    EXPECT_TRUE(std::regex_match(u, v4)) << u;
    seen.insert(u);
  }
  EXPECT_EQ(seen.size(), 100u);
}

TEST(PushDelivery, OptionsThatCannotWork) {
  PushOptions o;
  EXPECT_THROW(ValidatePushOptions(o), Error);  // no backend
  o.pyroscope_url = "http://127.0.0.1:4040";
  EXPECT_NO_THROW(ValidatePushOptions(o));
  o.interval = std::chrono::milliseconds(10);
  EXPECT_THROW(ValidatePushOptions(o), Error);
  o.interval = std::chrono::seconds(15);
  o.delivery.queue_limit = 0;
  EXPECT_THROW(ValidatePushOptions(o), Error);
  o.delivery.queue_limit = 1;
  o.discovery.service_name_from = "env:";
  EXPECT_THROW(ValidatePushOptions(o), Error);
}

// A token or basic auth over http:// is clear text on the network: refused
// unless asked for; a loopback URL and https are fine.
TEST(PushOptions, CredentialsInClearTextAreRefusedUnlessAskedFor) {
  PushOptions o;
  o.pyroscope_url = "http://pyroscope.example:4040";
  o.pyroscope_token_file = "/run/secrets/token";
  try {
    ValidatePushOptions(o);
    ADD_FAILURE() << "a token over http:// was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    EXPECT_EQ(std::string(e.what()),
              "--pyroscope-token-file would send its credentials in clear text to "
              "http://pyroscope.example:4040");
    EXPECT_NE(e.hint().find("--allow-insecure-credentials"), std::string::npos) << e.hint();
  }
  o.allow_insecure_credentials = true;
  EXPECT_NO_THROW(ValidatePushOptions(o));
  o.allow_insecure_credentials = false;
  for (const char* url : {"https://pyroscope.example:4040", "http://127.0.0.1:4040",
                          "http://localhost", "http://[::1]:4040/prefix"}) {
    o.pyroscope_url = url;
    EXPECT_NO_THROW(ValidatePushOptions(o)) << url;
  }
  o.pyroscope_token_file.clear();
  o.parca_url = "http://parca:7070";
  o.parca_basic_auth_file = "/run/secrets/basic";
  EXPECT_THROW(ValidatePushOptions(o), Error);
  o.parca_basic_auth_file.clear();
  EXPECT_NO_THROW(ValidatePushOptions(o));  // no credentials: nothing to leak
}

}  // namespace
}  // namespace goheap2pprof
