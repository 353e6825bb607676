// The names of a process's pod from the runtime's OCI bundle on a fake host
// root: where each runtime keeps it, what its annotations say, and what a
// missing, unreadable or malformed bundle costs.
#include "agent/common/pod_identity.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "base/error.h"

namespace goheap2pprof {
namespace {

namespace fs = std::filesystem;

const std::string kPodContainerId =
    "2e8d15dd8e7cc5ab2a6c1a9b8f5b0c39bb9b0b6c9e1fc4d2d0e2a5d1a3c8b7f4";
const std::string kPodUid = "6d3a2a3c-1b5e-4e6f-9a0b-2c3d4e5f6a7b";

// Where the kubelet and the runtime put the container (cgroupfs driver).
const std::string kCgroupsPath = "/kubepods/burstable/pod" + kPodUid + "/" + kPodContainerId;

std::string ContainerdConfig(const std::string& extra = "") {
  return R"({"ociVersion":"1.0.2","process":{"args":["/zoo"]},"linux":{"cgroupsPath":")" +
         kCgroupsPath +
         R"("},"annotations":{)"
         R"("io.kubernetes.cri.container-type":"container",)"
         R"("io.kubernetes.cri.sandbox-name":"web-0",)"
         R"("io.kubernetes.cri.sandbox-namespace":"shop",)"
         R"("io.kubernetes.cri.sandbox-uid":")" +
         kPodUid + R"(",)" + extra +
         R"("io.kubernetes.cri.container-name":"api",)"
         R"("io.kubernetes.cri.image-name":"example.com/api:1"}})";
}

const std::string kCrioConfig =
    R"({"linux":{"cgroupsPath":")" + kCgroupsPath +
    R"("},)"
    R"("annotations":{"io.kubernetes.pod.name":"db-1","io.kubernetes.pod.namespace":"data",)"
    R"("io.kubernetes.pod.uid":"11111111-2222-3333-4444-555555555555",)"
    R"("io.kubernetes.container.name":"pg"}})";

class HostRoot : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("pod_identity_test." + std::to_string(getpid()) + "." +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }

  void Write(const std::string& rel, const std::string& text) {
    fs::path p = root_ / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }
  std::string ContainerdBundle(const std::string& ns) {
    return "run/containerd/io.containerd.runtime.v2.task/" + ns + "/" + kPodContainerId +
           "/config.json";
  }
  std::string CrioBundle() {
    return "run/containers/storage/overlay-containers/" + kPodContainerId + "/userdata/config.json";
  }
  CgroupIdentity Cgroup(ContainerRuntime r, const std::string& uid = kPodUid) {
    CgroupIdentity c;
    c.runtime = r;
    c.container_id = kPodContainerId;
    c.pod_uid = uid;
    c.qos = uid.empty() ? "" : "burstable";
    c.path = kCgroupsPath;
    return c;
  }

  fs::path root_;
};

TEST(BundleAnnotations, ContainerdKeys) {
  BundleAnnotations b = ParseBundleAnnotations(ContainerdConfig());
  EXPECT_EQ(b.pod_namespace, "shop");
  EXPECT_EQ(b.pod, "web-0");
  EXPECT_EQ(b.pod_uid, kPodUid);
  EXPECT_EQ(b.container, "api");
  EXPECT_EQ(b.image, "example.com/api:1");
  EXPECT_EQ(b.container_type, "container");
  EXPECT_EQ(b.service_name, "");
  EXPECT_EQ(b.cgroups_path, kCgroupsPath);
}

TEST(BundleAnnotations, CrioKeys) {
  BundleAnnotations b = ParseBundleAnnotations(kCrioConfig);
  EXPECT_EQ(b.pod_namespace, "data");
  EXPECT_EQ(b.pod, "db-1");
  EXPECT_EQ(b.pod_uid, "11111111-2222-3333-4444-555555555555");
  EXPECT_EQ(b.container, "pg");
}

TEST(BundleAnnotations, ServiceNameAnnotation) {
  EXPECT_EQ(ParseBundleAnnotations(ContainerdConfig(R"("pyroscope.io/service_name":"shop-api",)"))
                .service_name,
            "shop-api");
}

TEST(BundleAnnotations, HostileShapes) {
  EXPECT_THROW(ParseBundleAnnotations("{\"annotations\":"), Error);
  EXPECT_THROW(ParseBundleAnnotations("[1,2]"), Error);
  EXPECT_THROW(ParseBundleAnnotations(""), Error);
  // Not strings, or no annotations object: no names, no failure.
  BundleAnnotations b = ParseBundleAnnotations(
      R"({"annotations":{"io.kubernetes.cri.sandbox-name":7,"io.kubernetes.cri.container-name":null}})");
  EXPECT_EQ(b.pod, "");
  EXPECT_EQ(b.container, "");
  EXPECT_EQ(ParseBundleAnnotations(R"({"annotations":[]})").pod, "");
}

TEST_F(HostRoot, ContainerdBundleInK8sNamespace) {
  Write(ContainerdBundle("k8s.io"), ContainerdConfig());
  // The cgroupfs path does not say which runtime: the bundle does.
  PodIdentity id =
      PodIdentityReader(root_.string() + "/", "node-a").Read(Cgroup(ContainerRuntime::kUnknown));
  EXPECT_EQ(id.failure, "");
  EXPECT_EQ(id.runtime, ContainerRuntime::kContainerd);
  EXPECT_EQ(id.PrefixedContainerId(), "containerd://" + kPodContainerId);
  using L = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(IdentityLabels(id), (L{{"namespace", "shop"},
                                   {"pod", "web-0"},
                                   {"pod_uid", kPodUid},
                                   {"container", "api"},
                                   {"container_id", "containerd://" + kPodContainerId},
                                   {"node", "node-a"}}));
  EXPECT_EQ(DefaultServiceName(id), "shop/api");
}

TEST_F(HostRoot, ContainerdBundleInAnotherNamespace) {
  Write(ContainerdBundle("moby"), ContainerdConfig(R"("pyroscope.io/service_name":"shop-api",)"));
  PodIdentity id = PodIdentityReader(root_.string()).Read(Cgroup(ContainerRuntime::kContainerd));
  EXPECT_EQ(id.failure, "");
  EXPECT_EQ(id.names.pod, "web-0");
  EXPECT_EQ(DefaultServiceName(id), "shop-api");
}

TEST_F(HostRoot, CrioBundle) {
  Write(CrioBundle(), kCrioConfig);
  PodIdentity id = PodIdentityReader(root_.string()).Read(Cgroup(ContainerRuntime::kUnknown));
  EXPECT_EQ(id.failure, "");
  EXPECT_EQ(id.runtime, ContainerRuntime::kCrio);
  EXPECT_EQ(id.PrefixedContainerId(), "cri-o://" + kPodContainerId);
  EXPECT_EQ(DefaultServiceName(id), "data/pg");
}

TEST_F(HostRoot, AHintedRuntimeLooksOnlyInItsOwnPlace) {
  Write(CrioBundle(), kCrioConfig);
  PodIdentity id = PodIdentityReader(root_.string()).Read(Cgroup(ContainerRuntime::kContainerd));
  EXPECT_EQ(id.failure, "no_bundle");
  EXPECT_EQ(id.names.pod, "");
}

TEST_F(HostRoot, MissingBundleCostsTheNamesOnly) {
  PodIdentity id = PodIdentityReader(root_.string()).Read(Cgroup(ContainerRuntime::kUnknown));
  EXPECT_EQ(id.failure, "no_bundle");
  using L = std::vector<std::pair<std::string, std::string>>;
  // The cgroup still gives the uid and the (unprefixed) id.
  EXPECT_EQ(IdentityLabels(id), (L{{"pod_uid", kPodUid}, {"container_id", kPodContainerId}}));
  EXPECT_EQ(DefaultServiceName(id), "");
}

TEST_F(HostRoot, MalformedBundle) {
  Write(ContainerdBundle("k8s.io"), "{\"annotations\": {");
  PodIdentity id = PodIdentityReader(root_.string()).Read(Cgroup(ContainerRuntime::kContainerd));
  EXPECT_EQ(id.failure, "malformed");
  EXPECT_EQ(id.PrefixedContainerId(), "containerd://" + kPodContainerId);
}

TEST_F(HostRoot, AFifoIsNotReadNorWaitedFor) {
  fs::create_directories((root_ / ContainerdBundle("k8s.io")).parent_path());
  ASSERT_EQ(mkfifo((root_ / ContainerdBundle("k8s.io")).c_str(), 0600), 0);
  PodIdentity id = PodIdentityReader(root_.string()).Read(Cgroup(ContainerRuntime::kContainerd));
  EXPECT_EQ(id.failure, "unreadable");
}

TEST_F(HostRoot, AnOversizedBundleIsNotRead) {
  Write(ContainerdBundle("k8s.io"), ContainerdConfig());
  fs::resize_file(root_ / ContainerdBundle("k8s.io"), (4 << 20) + 1);
  PodIdentity id = PodIdentityReader(root_.string()).Read(Cgroup(ContainerRuntime::kContainerd));
  EXPECT_EQ(id.failure, "unreadable");
}

TEST_F(HostRoot, AProcessOutsideTheBundlesCgroupGetsNoIdentity) {
  // Issue 38, finding 9: a user's process in a cgroup named after a victim's
  // container (its id is world-readable) must not wear the victim's pod.
  Write(ContainerdBundle("k8s.io"), ContainerdConfig());
  const std::string user = "/user.slice/user-1000.slice/user@1000.service/app.slice/";
  for (const std::string& path : {"/elsewhere" + kCgroupsPath,
                                  "/kubepods/besteffort/pod" + kPodUid + "/" + kPodContainerId}) {
    SCOPED_TRACE(path);
    CgroupIdentity c = Cgroup(ContainerRuntime::kUnknown);
    c.path = path;
    PodIdentity id = PodIdentityReader(root_.string(), "node-a").Read(c);
    EXPECT_EQ(id.failure, "cgroup_mismatch");
    using L = std::vector<std::pair<std::string, std::string>>;
    EXPECT_EQ(IdentityLabels(id), (L{{"node", "node-a"}}));
    EXPECT_EQ(DefaultServiceName(id), "");
  }
  // The cgroup path alone already names nothing under a user's delegation.
  PodIdentity id = PodIdentityReader(root_.string())
                       .Read(ParseCgroupIdentity("0::" + user + "cri-containerd-" +
                                                 kPodContainerId + ".scope\n"));
  EXPECT_TRUE(IdentityLabels(id).empty());
  EXPECT_EQ(DefaultServiceName(id), "");
}

TEST_F(HostRoot, ABundleWithoutCgroupsPathProvesNothing) {
  Write(ContainerdBundle("k8s.io"), R"({"annotations":{"io.kubernetes.cri.sandbox-name":"x"}})");
  PodIdentity id = PodIdentityReader(root_.string()).Read(Cgroup(ContainerRuntime::kContainerd));
  EXPECT_EQ(id.failure, "cgroup_mismatch");
  EXPECT_EQ(id.names.pod, "");
}

TEST_F(HostRoot, DockerAndPodmanNeedNoBundle) {
  for (ContainerRuntime r : {ContainerRuntime::kDocker, ContainerRuntime::kPodman}) {
    PodIdentity id = PodIdentityReader(root_.string()).Read(Cgroup(r, ""));
    EXPECT_EQ(id.failure, "");
    EXPECT_EQ(id.PrefixedContainerId(), std::string(ContainerIdPrefix(r)) + kPodContainerId);
  }
}

TEST(PodIdentity, ServiceNameOfASystemdService) {
  PodIdentity id = PodIdentityReader("/nonexistent")
                       .Read(ParseCgroupIdentity("0::/system.slice/pay\\x2dments.service\n"));
  EXPECT_EQ(id.failure, "");
  EXPECT_EQ(DefaultServiceName(id), "pay-ments");
  EXPECT_TRUE(IdentityLabels(id).empty());
}

TEST_F(HostRoot, TheCacheReadsABundleOncePerProcess) {
  Write(ContainerdBundle("k8s.io"), ContainerdConfig());
  PodIdentityCache cache(root_.string(), "node-a");
  EXPECT_EQ(cache.Get(10, 100, Cgroup(ContainerRuntime::kUnknown)).names.pod, "web-0");
  fs::remove(root_ / ContainerdBundle("k8s.io"));
  // Same process: the cached names; a new process in the pid: read again.
  EXPECT_EQ(cache.Get(10, 100, Cgroup(ContainerRuntime::kUnknown)).names.pod, "web-0");
  EXPECT_EQ(cache.Get(10, 200, Cgroup(ContainerRuntime::kUnknown)).failure, "no_bundle");
  EXPECT_EQ(cache.Get(10, 200, Cgroup(ContainerRuntime::kUnknown)).node, "node-a");
  EXPECT_EQ(cache.failures(), (std::map<std::string, uint64_t>{{"no_bundle", 1}}));
  cache.Retain({{10, 200}});
  Write(ContainerdBundle("k8s.io"), ContainerdConfig());
  EXPECT_EQ(cache.Get(10, 100, Cgroup(ContainerRuntime::kUnknown)).names.pod, "web-0");
  EXPECT_EQ(cache.Get(10, 200, Cgroup(ContainerRuntime::kUnknown)).failure, "no_bundle");
}

TEST(PodIdentity, NodeNameFromFlagThenEnvironment) {
  setenv("NODE_NAME", "from-env", 1);
  EXPECT_EQ(NodeName("from-flag"), "from-flag");
  EXPECT_EQ(NodeName(""), "from-env");
  unsetenv("NODE_NAME");
  EXPECT_EQ(NodeName(""), "");
}

}  // namespace
}  // namespace goheap2pprof
