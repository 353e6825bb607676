// Every cgroup path shape of fleet.md §9 (from the tests of Alloy, the
// OpenTelemetry eBPF profiler and coroot, and what a containerd pod showed
// on this machine), as /proc/<pid>/cgroup lines really read.
#include "agent/common/cgroup_path.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace goheap2pprof {
namespace {

const std::string kId = "2e8d15dd8e7cc5ab2a6c1a9b8f5b0c39bb9b0b6c9e1fc4d2d0e2a5d1a3c8b7f4";
const std::string kUid = "6d3a2a3c-1b5e-4e6f-9a0b-2c3d4e5f6a7b";
const std::string kUidUnderscores = "6d3a2a3c_1b5e_4e6f_9a0b_2c3d4e5f6a7b";
const std::string kUid32 = "6d3a2a3c1b5e4e6f9a0b2c3d4e5f6a7b";

using R = ContainerRuntime;

struct CgroupPathCase {
  std::string name;
  std::string text;  // a whole /proc/<pid>/cgroup
  R runtime;
  std::string container_id, pod_uid, qos, unit;
};

std::vector<CgroupPathCase> Cases() {
  const std::string sys_burstable =
      "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + kUidUnderscores +
      ".slice/";
  return {
      {"containerd cgroupfs v1 (a real crictl pod here)",
       "9:name=systemd:/kubepods/burstable/pod" + kUid + "/" + kId +
           "\n4:memory:/kubepods/burstable/pod" + kUid + "/" + kId +
           "\n0::/kubepods/burstable/pod" + kUid + "/" + kId + "\n",
       R::kUnknown, kId, kUid, "burstable", ""},
      {"cgroupfs besteffort", "0::/kubepods/besteffort/pod" + kUid + "/" + kId + "\n", R::kUnknown,
       kId, kUid, "besteffort", ""},
      {"cgroupfs guaranteed", "0::/kubepods/pod" + kUid + "/" + kId + "\n", R::kUnknown, kId, kUid,
       "guaranteed", ""},
      {"cgroupfs cri-o", "0::/kubepods/pod" + kUid + "/crio-" + kId + "\n", R::kCrio, kId, kUid,
       "guaranteed", ""},
      {"cgroupfs 32-hex uid", "11:cpu,cpuacct:/kubepods/burstable/pod" + kUid32 + "/" + kId + "\n",
       R::kUnknown, kId, kUid32, "burstable", ""},
      {"systemd v2 containerd", "0::" + sys_burstable + "cri-containerd-" + kId + ".scope\n",
       R::kContainerd, kId, kUid, "burstable", ""},
      {"systemd v1 cri-o",
       "12:memory:" + sys_burstable + "crio-" + kId + ".scope\n1:name=systemd:" + sys_burstable +
           "crio-" + kId + ".scope\n",
       R::kCrio, kId, kUid, "burstable", ""},
      {"systemd cri-o trailing /container",
       "0::" + sys_burstable + "crio-" + kId + ".scope/container\n", R::kCrio, kId, kUid,
       "burstable", ""},
      {"systemd docker (dockershim)", "0::" + sys_burstable + "docker-" + kId + ".scope\n",
       R::kDocker, kId, kUid, "burstable", ""},
      {"systemd besteffort",
       "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + kUidUnderscores +
           ".slice/cri-containerd-" + kId + ".scope\n",
       R::kContainerd, kId, kUid, "besteffort", ""},
      {"systemd guaranteed",
       "0::/kubepods.slice/kubepods-pod" + kUidUnderscores + ".slice/cri-containerd-" + kId +
           ".scope\n",
       R::kContainerd, kId, kUid, "guaranteed", ""},
      {"containerd on v1 with the systemd driver",
       "10:memory:/system.slice/containerd.service/kubepods-burstable-pod" + kUidUnderscores +
           ".slice:cri-containerd:" + kId + "\n",
       R::kContainerd, kId, kUid, "burstable", ""},
      {"containerd on v1, guaranteed pod",
       "10:memory:/system.slice/containerd.service/kubepods-pod" + kUidUnderscores +
           ".slice:cri-containerd:" + kId + "\n",
       R::kContainerd, kId, kUid, "guaranteed", ""},
      {"nested cgroup namespace",
       "0::/../../kubepods-besteffort-pod" + kUidUnderscores + ".slice/cri-containerd-" + kId +
           ".scope\n",
       R::kContainerd, kId, kUid, "besteffort", ""},
      {"kind: kubelet-kubepods slices",
       "0::/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-burstable.slice/"
       "kubelet-kubepods-burstable-pod" +
           kUidUnderscores + ".slice/cri-containerd-" + kId + ".scope\n",
       R::kContainerd, kId, kUid, "burstable", ""},
      {"docker cgroupfs", "12:pids:/docker/" + kId + "\n0::/docker/" + kId + "\n", R::kDocker, kId,
       "", "", ""},
      {"docker systemd", "0::/system.slice/docker-" + kId + ".scope\n", R::kDocker, kId, "", "",
       ""},
      {"podman systemd", "0::/machine.slice/libpod-" + kId + ".scope\n", R::kPodman, kId, "", "",
       ""},
      {"podman split /container", "0::/machine.slice/libpod-" + kId + ".scope/container\n",
       R::kPodman, kId, "", "", ""},
      {"podman cgroupfs", "4:memory:/libpod_parent/libpod-" + kId + "\n0::/\n", R::kPodman, kId, "",
       "", ""},
      {"podman's conmon is not the container",
       "0::/machine.slice/libpod-conmon-" + kId + ".scope\n", R::kNone, "", "", "", ""},
      {"cri-o's conmon is not the container",
       "0::" + sys_burstable + "crio-conmon-" + kId + ".scope\n", R::kNone, "", kUid, "burstable",
       ""},
      {"systemd service v2, escaped", "0::/system.slice/pay\\x2dments.service\n",
       R::kSystemdService, "", "", "", "pay-ments"},
      {"systemd service on v1 (hybrid: 0:: is the root)",
       "9:name=systemd:/system.slice/pay\\x2dments.service\n4:memory:/system.slice/"
       "pay\\x2dments.service\n0::/\n",
       R::kSystemdService, "", "", "", "pay-ments"},
      {"a login session is no service",
       "0::/user.slice/user-1000.slice/user@1000.service/app.slice/app-term.scope\n", R::kNone, "",
       "", "", ""},
      {"a user service",
       "0::/user.slice/user-1000.slice/user@1000.service/app.slice/sync.service\n",
       R::kSystemdService, "", "", "", "sync"},
      {"the runtime's own service is not the container's", "0::/system.slice/containerd.service\n",
       R::kSystemdService, "", "", "", "containerd"},
      {"Talos: pods still under kubepods", "0::/kubepods/burstable/pod" + kUid + "/" + kId + "\n",
       R::kUnknown, kId, kUid, "burstable", ""},
      {"Talos system service", "0::/podruntime/kubelet\n", R::kNone, "", "", "", ""},
      {"LXC", "0::/lxc.payload.web\n", R::kNone, "", "", "", ""},
      {"root", "0::/\n", R::kNone, "", "", "", ""},
      {"63 hex digits are no id", "0::/docker/" + kId.substr(1) + "\n", R::kNone, "", "", "", ""},
      {"upper case is no id", "0::/docker/" + std::string(64, 'A') + "\n", R::kNone, "", "", "",
       ""},
      {"a pod uid must be a uid", "0::/kubepods/burstable/podxyz/" + kId + "\n", R::kUnknown, kId,
       "", "", ""},
      // Issue 38, finding 9: container ids are world-readable, so a cgroup a
      // user may name is no proof of being in the container.
      {"a user's scope named after a container (systemd-run --user --scope)",
       "0::/user.slice/user-1000.slice/user@1000.service/app.slice/cri-containerd-" + kId +
           ".scope\n",
       R::kNone, "", "", "", ""},
      {"a user's own kubepods tree, delegated by systemd",
       "0::/user.slice/user-1000.slice/user@1000.service/kubepods/burstable/pod" + kUid + "/" +
           kId + "\n",
       R::kNone, "", "", "", ""},
      {"a user's pod slice and scope",
       "0::/user.slice/user-1000.slice/user@1000.service/kubepods.slice/"
       "kubepods-burstable.slice/kubepods-burstable-pod" +
           kUidUnderscores + ".slice/cri-containerd-" + kId + ".scope\n",
       R::kNone, "", "", "", ""},
      {"a v1 session scope",
       "4:memory:/user.slice/user-1000.slice/session-3.scope/crio-" + kId + ".scope\n", R::kNone,
       "", "", "", ""},
      {"a container element under no runtime", "0::/mine/cri-containerd-" + kId + ".scope\n",
       R::kNone, "", "", "", ""},
      {"/docker below the top is not docker's", "0::/mine/docker/" + kId + "\n", R::kNone, "", "",
       "", ""},
      {"a scope deeper in system.slice (a delegated service's own)",
       "0::/system.slice/ci.service/docker-" + kId + ".scope\n", R::kSystemdService, "", "", "",
       "ci"},
      {"nested namespace: a sibling container of our pod", "0::/../" + kId + "\n", R::kUnknown, kId,
       "", "", ""},
      {"nested namespace, cgroupfs: a pod of another QoS class",
       "0::/../../../burstable/pod" + kUid + "/" + kId + "\n", R::kUnknown, kId, kUid, "burstable",
       ""},
      {"nested namespace, cgroupfs: a pod beside ours", "0::/../../pod" + kUid + "/" + kId + "\n",
       R::kUnknown, kId, "", "", ""},
      {"empty", "", R::kNone, "", "", "", ""},
      {"no colon", "garbage line\n", R::kNone, "", "", "", ""},
  };
}

TEST(CgroupPath, EveryShape) {
  for (const CgroupPathCase& c : Cases()) {
    SCOPED_TRACE(c.name);
    CgroupIdentity id = ParseCgroupIdentity(c.text);
    EXPECT_EQ(ContainerRuntimeName(id.runtime), ContainerRuntimeName(c.runtime));
    EXPECT_EQ(id.container_id, c.container_id);
    EXPECT_EQ(id.pod_uid, c.pod_uid);
    EXPECT_EQ(id.qos, c.qos);
    EXPECT_EQ(id.systemd_unit, c.unit);
  }
}

TEST(CgroupPath, TheV2LineWinsAmongEquals) {
  const std::string other(64, 'c');
  CgroupIdentity id = ParseCgroupIdentity("4:memory:/docker/" + other +
                                          "\n0::/system.slice/docker-" + kId + ".scope\n");
  EXPECT_EQ(id.container_id, kId);
}

TEST(CgroupPath, AContainerOutranksAService) {
  CgroupIdentity id =
      ParseCgroupIdentity("0::/system.slice/app.service\n4:memory:/docker/" + kId + "\n");
  EXPECT_EQ(id.runtime, R::kDocker);
  EXPECT_EQ(id.systemd_unit, "");
}

TEST(CgroupPath, UnescapeSystemdName) {
  EXPECT_EQ(UnescapeSystemdName("pay\\x2dments"), "pay-ments");
  EXPECT_EQ(UnescapeSystemdName("a\\x2fb\\x5cc"), "a/b\\c");
  EXPECT_EQ(UnescapeSystemdName("trailing\\x2"), "trailing\\x2");
  EXPECT_EQ(UnescapeSystemdName("bad\\xzz"), "bad\\xzz");
  EXPECT_EQ(UnescapeSystemdName(""), "");
}

TEST(CgroupPath, Prefixes) {
  EXPECT_EQ(ContainerIdPrefix(R::kContainerd), "containerd://");
  EXPECT_EQ(ContainerIdPrefix(R::kCrio), "cri-o://");
  EXPECT_EQ(ContainerIdPrefix(R::kDocker), "docker://");
  EXPECT_EQ(ContainerIdPrefix(R::kPodman), "");
}

TEST(CgroupPath, TheBundlesCgroupsPathMustBeTheProcesss) {
  const std::string uid_ = kUidUnderscores;
  const std::string sys =
      "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uid_ + ".slice/";
  const std::string systemd_form = "kubepods-burstable-pod" + uid_ + ".slice:cri-containerd:" + kId;
  auto match = [](const std::string& proc_cgroup, const std::string& cgroups_path) {
    return CgroupPathMatchesBundle(ParseCgroupIdentity(proc_cgroup), cgroups_path);
  };
  const std::string cgroupfs = "/kubepods/burstable/pod" + kUid + "/" + kId;
  EXPECT_TRUE(match("0::" + cgroupfs + "\n", cgroupfs));
  EXPECT_TRUE(match("0::" + sys + "cri-containerd-" + kId + ".scope\n", systemd_form));
  EXPECT_TRUE(match("0::" + sys + "crio-" + kId + ".scope/container\n",
                    "kubepods-burstable-pod" + uid_ + ".slice:crio:" + kId));
  EXPECT_TRUE(
      match("10:memory:/system.slice/containerd.service/" + systemd_form + "\n", systemd_form));
  EXPECT_TRUE(
      match("0::/../../kubepods-burstable-pod" + uid_ + ".slice/cri-containerd-" + kId + ".scope\n",
            systemd_form));
  EXPECT_TRUE(match("0::/../../pod" + kUid + "/" + kId + "\n", cgroupfs));
  // A path that only ends like the container's is another cgroup.
  EXPECT_FALSE(match("0::/elsewhere" + cgroupfs + "\n", cgroupfs));
  EXPECT_FALSE(match("0::/kubepods/besteffort/pod" + kUid + "/" + kId + "\n", cgroupfs));
  EXPECT_FALSE(match("0::" + sys + "cri-containerd-" + kId + ".scope\n",
                     "kubepods-besteffort-pod" + uid_ + ".slice:cri-containerd:" + kId));
  EXPECT_FALSE(match("0::" + cgroupfs + "\n", ""));
  EXPECT_FALSE(match("0::" + cgroupfs + "\n", "nonsense"));
  EXPECT_FALSE(match("0::" + cgroupfs + "\n", "a:b:c:d"));
  EXPECT_FALSE(match("0::/system.slice/app.service\n", "/system.slice/app.service"));
}

TEST(CgroupPath, ALongPathIsBounded) {
  std::string path = "0::";
  for (int i = 0; i < 10000; ++i) path += "/x";
  path += "/docker/" + kId + "\n";
  // The id lies beyond the walk's bound: not found, and no time spent.
  EXPECT_EQ(ParseCgroupIdentity(path).container_id, "");
}

}  // namespace
}  // namespace goheap2pprof
