// Memory cgroup discovery and reading on fake trees: /proc/<pid>/cgroup
// lines (v1, v2, hybrid), nested cgroups with the limit on an ancestor,
// cgroup namespaces (our own, and a target outside ours reached through
// /proc/<pid>/root), and the counters watch reads.
#include "proc/cgroup.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <string>

namespace goheap2pprof {
namespace {

namespace fs = std::filesystem;

// A temporary directory standing for "/".
class FakeRoot {
 public:
  FakeRoot() {
    char tmpl[] = "/tmp/g2p-cgroup-test.XXXXXX";
    root_ = ::mkdtemp(tmpl);
  }
  ~FakeRoot() { fs::remove_all(root_); }
  void Write(const std::string& path, const std::string& text) const {
    fs::create_directories(fs::path(root_ + path).parent_path());
    std::ofstream(root_ + path) << text;
  }
  const std::string& root() const { return root_; }

 private:
  std::string root_;
};

constexpr const char* kV1Mountinfo =
    "25 1 0:22 / /sys/fs/cgroup rw - tmpfs tmpfs rw,mode=755\n"
    "33 25 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
    "36 25 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
    "41 25 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw,nsdelegate\n";
constexpr const char* kV2Mountinfo =
    "30 1 0:26 / /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw,nsdelegate\n";
constexpr const char* kV1Unlimited = "9223372036854771712\n";

void WriteV1Cgroup(const FakeRoot& r, const std::string& dir, const std::string& limit,
                   const std::string& usage) {
  r.Write(dir + "/memory.limit_in_bytes", limit);
  r.Write(dir + "/memory.usage_in_bytes", usage);
  r.Write(dir + "/memory.stat", "cache 100\ninactive_file 7\ntotal_inactive_file 4096\n");
  r.Write(dir + "/memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n");
}

TEST(ParseProcCgroup, V1AndV2Lines) {
  auto lines = ParseProcCgroup(
      "12:cpu,cpuacct:/a\n4:memory:/kubepods/pod1/ctr:with:colons\n0::/user.slice\n"
      "garbage\n5:x:relative\n");
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0].hierarchy_id, 12);
  EXPECT_EQ(lines[0].controllers, (std::vector<std::string>{"cpu", "cpuacct"}));
  EXPECT_EQ(lines[1].controllers, (std::vector<std::string>{"memory"}));
  EXPECT_EQ(lines[1].path, "/kubepods/pod1/ctr:with:colons");
  EXPECT_EQ(lines[2].hierarchy_id, 0);
  EXPECT_TRUE(lines[2].controllers.empty());
  EXPECT_EQ(lines[2].path, "/user.slice");
}

// The path discovery's allow-list and labels use (ProcessCgroupPath): the v2
// line's, else the first line's, from the same parser as watch's cgroups.
TEST(ProcessCgroupPath, TheV2LineElseTheFirstLine) {
  EXPECT_EQ(ProcessCgroupPath("12:memory:/docker/abc\n0::/system.slice/app.service\n"),
            "/system.slice/app.service");
  EXPECT_EQ(ProcessCgroupPath("12:memory:/kubepods/pod1/c1\n4:cpu,cpuacct:/kubepods/pod1/c1\n"),
            "/kubepods/pod1/c1");
  EXPECT_EQ(ProcessCgroupPath("1:name=systemd:/user.slice\n"), "/user.slice");
  // A nested cgroup namespace shows the path relative to the reader's.
  EXPECT_EQ(ProcessCgroupPath("0::/../../kubepods.slice/x.scope\n"),
            "/../../kubepods.slice/x.scope");
  // The path may itself hold ':'.
  EXPECT_EQ(ProcessCgroupPath("0::/a:b\n"), "/a:b");
  EXPECT_EQ(ProcessCgroupPath(""), "");
  EXPECT_EQ(ProcessCgroupPath("junk\nx:y\n"), "");
}

TEST(ParseCgroupMounts, KeepsCgroupMountsAndDecodesEscapes) {
  auto m = ParseCgroupMounts(std::string(kV1Mountinfo) +
                             "50 25 0:40 /x\\040y /mnt/my\\040cg rw - cgroup2 cgroup2 rw\n");
  ASSERT_EQ(m.size(), 4u);
  EXPECT_EQ(m[0].version, CgroupVersion::kV1);
  EXPECT_EQ(m[1].mount_point, "/sys/fs/cgroup/memory");
  EXPECT_EQ(m[1].options, (std::vector<std::string>{"rw", "memory"}));
  EXPECT_EQ(m[2].version, CgroupVersion::kV2);
  EXPECT_EQ(m[3].root, "/x y");
  EXPECT_EQ(m[3].mount_point, "/mnt/my cg");
}

TEST(PathBelowMountRoot, ComponentsAndNamespaces) {
  EXPECT_EQ(PathBelowMountRoot("/a/b", "/"), "/a/b");
  EXPECT_EQ(PathBelowMountRoot("/a/b", "/a"), "/b");
  EXPECT_EQ(PathBelowMountRoot("/a", "/a"), "");
  EXPECT_EQ(PathBelowMountRoot("/", "/"), "");
  EXPECT_FALSE(PathBelowMountRoot("/ab", "/a"));
  EXPECT_FALSE(PathBelowMountRoot("/b", "/a"));
  // Outside the reader's cgroup namespace.
  EXPECT_FALSE(PathBelowMountRoot("/../sibling", "/"));
  EXPECT_EQ(PathBelowMountRoot("/../sibling/x", "/../sibling"), "/x");
}

TEST(ParseMemoryLimit, MaxAndV1Unlimited) {
  EXPECT_FALSE(ParseMemoryLimit("max\n"));
  EXPECT_FALSE(ParseMemoryLimit(kV1Unlimited));
  EXPECT_EQ(ParseMemoryLimit("209715200\n"), 209715200u);
  EXPECT_FALSE(ParseMemoryLimit("junk"));
  EXPECT_EQ(FlatKeyedValue("low 0\nhigh 0\nmax 12\noom 3\noom_kill 1\n", "oom"), 3u);
  EXPECT_EQ(FlatKeyedValue("oom_kill 1\noom 3\n", "oom"), 3u);
  EXPECT_FALSE(FlatKeyedValue("oom_kill 1\n", "oom"));
}

TEST(CgroupFs, V1NestedLimitOnAncestor) {
  FakeRoot r;
  r.Write("/proc/self/mountinfo", kV1Mountinfo);
  // Hybrid: the v1 memory line wins over the v2 one.
  r.Write("/proc/42/cgroup", "4:memory:/kubepods/pod1/ctr\n1:cpu:/\n0::/\n");
  const std::string base = "/sys/fs/cgroup/memory";
  WriteV1Cgroup(r, base, kV1Unlimited, "999999\n");
  WriteV1Cgroup(r, base + "/kubepods", kV1Unlimited, "888888\n");
  WriteV1Cgroup(r, base + "/kubepods/pod1", "536870912\n", "300000000\n");
  WriteV1Cgroup(r, base + "/kubepods/pod1/ctr", kV1Unlimited, "299000000\n");
  CgroupFs cgfs(r.root());
  std::optional<MemoryCgroup> cg = cgfs.FindMemoryCgroup(42);
  ASSERT_TRUE(cg);
  EXPECT_EQ(cg->version, CgroupVersion::kV1);
  EXPECT_EQ(cg->hierarchy_path, "/kubepods/pod1/ctr");
  EXPECT_EQ(cg->dir, base + "/kubepods/pod1/ctr");
  EXPECT_EQ(cg->top_dir, base);
  EXPECT_EQ(cg->limit_dir, base + "/kubepods/pod1");
  EXPECT_FALSE(cg->via_target_root);
  MemoryReading m = cgfs.Read(*cg);
  EXPECT_EQ(m.usage, 300000000u);  // of the limited ancestor
  EXPECT_EQ(m.limit, 536870912u);
  EXPECT_EQ(m.inactive_file, 4096u);  // v1: the hierarchical total_ figure
  EXPECT_EQ(m.WorkingSet(), 300000000u - 4096);
  EXPECT_EQ(m.oom_kills, 2u);
  EXPECT_FALSE(m.max_events);  // v1 has no memory.events
  EXPECT_FALSE(cgfs.EventsFile(*cg));
}

TEST(CgroupFs, V1NoFiniteLimitAnywhere) {
  FakeRoot r;
  r.Write("/proc/self/mountinfo", kV1Mountinfo);
  r.Write("/proc/42/cgroup", "4:memory:/a\n");
  WriteV1Cgroup(r, "/sys/fs/cgroup/memory", kV1Unlimited, "1\n");
  WriteV1Cgroup(r, "/sys/fs/cgroup/memory/a", kV1Unlimited, "2\n");
  CgroupFs cgfs(r.root());
  std::optional<MemoryCgroup> cg = cgfs.FindMemoryCgroup(42);
  ASSERT_TRUE(cg);
  EXPECT_FALSE(cg->limit_dir);
  MemoryReading m = cgfs.Read(*cg);
  EXPECT_EQ(m.usage, 2u);  // its own cgroup's
  EXPECT_FALSE(m.limit);
}

TEST(CgroupFs, V1InsideACgroupNamespace) {
  // A container whose cgroup namespace root is its own cgroup: both
  // /proc/<pid>/cgroup and the mount root show "/".
  FakeRoot r;
  r.Write("/proc/self/mountinfo",
          "36 25 0:32 / /sys/fs/cgroup/memory ro,relatime - cgroup cgroup rw,memory\n");
  r.Write("/proc/42/cgroup", "4:memory:/\n");
  WriteV1Cgroup(r, "/sys/fs/cgroup/memory", "268435456\n", "1000\n");
  std::optional<MemoryCgroup> cg = CgroupFs(r.root()).FindMemoryCgroup(42);
  ASSERT_TRUE(cg);
  EXPECT_EQ(cg->dir, "/sys/fs/cgroup/memory");
  EXPECT_EQ(cg->limit_dir, "/sys/fs/cgroup/memory");
}

TEST(CgroupFs, V1MountOfASubtree) {
  // Docker without cgroup namespaces mounts the container's cgroup as the
  // root of its /sys/fs/cgroup/memory; the path is the host's.
  FakeRoot r;
  r.Write("/proc/self/mountinfo",
          "36 25 0:32 /docker/abc /sys/fs/cgroup/memory ro - cgroup cgroup rw,memory\n");
  r.Write("/proc/42/cgroup", "9:memory:/docker/abc\n");
  WriteV1Cgroup(r, "/sys/fs/cgroup/memory", "268435456\n", "1000\n");
  std::optional<MemoryCgroup> cg = CgroupFs(r.root()).FindMemoryCgroup(42);
  ASSERT_TRUE(cg);
  EXPECT_EQ(cg->dir, "/sys/fs/cgroup/memory");
  EXPECT_EQ(cg->limit_dir, "/sys/fs/cgroup/memory");
}

void WriteV2Cgroup(const FakeRoot& r, const std::string& dir, const std::string& max,
                   const std::string& current, const std::string& events) {
  r.Write(dir + "/memory.max", max);
  r.Write(dir + "/memory.current", current);
  r.Write(dir + "/memory.events", events);
  r.Write(dir + "/memory.stat", "anon 10\nfile 20\ninactive_file 1000\n");
  r.Write(dir + "/memory.pressure", "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n");
}

TEST(CgroupFs, V2Nested) {
  FakeRoot r;
  r.Write("/proc/self/mountinfo", kV2Mountinfo);
  r.Write("/proc/7/cgroup", "0::/system.slice/app.service/worker\n");
  r.Write("/sys/fs/cgroup/memory.stat", "anon 1\n");  // the root has no memory.current
  WriteV2Cgroup(r, "/sys/fs/cgroup/system.slice", "max\n", "5\n", "");
  WriteV2Cgroup(r, "/sys/fs/cgroup/system.slice/app.service", "209715200\n", "150000000\n",
                "low 0\nhigh 0\nmax 4\noom 1\noom_kill 1\noom_group_kill 0\n");
  WriteV2Cgroup(r, "/sys/fs/cgroup/system.slice/app.service/worker", "max\n", "149000000\n",
                "low 0\nhigh 0\nmax 0\noom 0\noom_kill 1\noom_group_kill 0\n");
  CgroupFs cgfs(r.root());
  std::optional<MemoryCgroup> cg = cgfs.FindMemoryCgroup(7);
  ASSERT_TRUE(cg);
  EXPECT_EQ(cg->version, CgroupVersion::kV2);
  EXPECT_EQ(cg->dir, "/sys/fs/cgroup/system.slice/app.service/worker");
  EXPECT_EQ(cg->limit_dir, "/sys/fs/cgroup/system.slice/app.service");
  MemoryReading m = cgfs.Read(*cg);
  EXPECT_EQ(m.usage, 150000000u);
  EXPECT_EQ(m.limit, 209715200u);
  EXPECT_EQ(m.inactive_file, 1000u);
  EXPECT_EQ(m.max_events, 4u);  // where the limit is
  EXPECT_EQ(m.oom_events, 1u);
  EXPECT_EQ(m.oom_kills, 1u);  // of its own cgroup
  EXPECT_EQ(cgfs.EventsFile(*cg), "/sys/fs/cgroup/system.slice/app.service/memory.events");
  EXPECT_EQ(cgfs.PressureFile(7), "/sys/fs/cgroup/system.slice/app.service/worker/memory.pressure");
}

// A target outside our cgroup namespace whose own mount namespace shows its
// cgroup at /sys/fs/cgroup (pid 77).
void WriteTargetOutsideOurNamespace(const FakeRoot& r) {
  r.Write("/proc/self/mountinfo", kV2Mountinfo);
  r.Write("/proc/77/cgroup", "0::/../app\n");
  r.Write("/proc/77/mountinfo",
          "20 1 0:40 / / rw - overlay overlay rw\n"
          "40 20 0:26 /../app /sys/fs/cgroup ro,nosuid - cgroup2 cgroup2 rw,nsdelegate\n");
  WriteV2Cgroup(r, "/proc/77/root/sys/fs/cgroup", "268435456\n", "200000000\n",
                "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n");
  r.Write("/proc/77/root/sys/fs/cgroup/memory.pressure", "some avg10=0.00\n");
}

TEST(CgroupFs, ByDefaultNeverThroughTheTargetsRoot) {
  // The node agent (the default, and watch with --host-root): the target's
  // mount namespace is the target's to shape, so nothing is read through it.
  FakeRoot r;
  WriteTargetOutsideOurNamespace(r);
  CgroupFs cgfs(r.root());
  EXPECT_FALSE(cgfs.FindMemoryCgroup(77));
  EXPECT_FALSE(cgfs.PressureFile(77));
}

TEST(CgroupFs, V2OutsideOurNamespaceThroughTheHostsMount) {
  // The node agent in a pod's cgroup namespace (cgroup v2), with the host's
  // hierarchy mounted at /host/sys/fs/cgroup (--host-root): that mount's root
  // shows as "/../../.." (our namespace's root is kubepods/podA/ctrX), a
  // target in another pod as "/../../podB/ctrY". Found in the host's mount,
  // never through the target's root.
  FakeRoot r;
  r.Write("/proc/self/mountinfo",
          "30 1 0:26 / /sys/fs/cgroup ro,nosuid - cgroup2 cgroup2 rw,nsdelegate\n"
          "31 1 0:26 /../../.. /host/sys/fs/cgroup ro,nosuid - cgroup2 cgroup2 rw,nsdelegate\n");
  r.Write("/proc/77/cgroup", "0::/../../podB/ctrY\n");
  WriteV2Cgroup(r, "/host/sys/fs/cgroup/kubepods/podA/ctrX", "max\n", "1\n", "");
  WriteV2Cgroup(r, "/host/sys/fs/cgroup/kubepods/podB/ctrY", "268435456\n", "200000000\n",
                "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n");
  r.Write("/host/sys/fs/cgroup/kubepods/podB/ctrY/memory.pressure", "some avg10=0.00\n");
  // Our own mount of our namespace's root is that same directory (same inode).
  fs::remove_all(r.root() + "/sys/fs/cgroup");
  fs::create_directories(r.root() + "/sys/fs");
  fs::create_symlink(r.root() + "/host/sys/fs/cgroup/kubepods/podA/ctrX",
                     r.root() + "/sys/fs/cgroup");
  // What the target's own mount namespace shows must not be read.
  r.Write("/proc/77/mountinfo",
          "40 20 0:26 /../../podB/ctrY /sys/fs/cgroup ro - cgroup2 cgroup2 rw,nsdelegate\n");
  WriteV2Cgroup(r, "/proc/77/root/sys/fs/cgroup", "max\n", "999\n", "");
  CgroupFs cgfs(r.root());
  std::optional<MemoryCgroup> cg = cgfs.FindMemoryCgroup(77);
  ASSERT_TRUE(cg);
  EXPECT_FALSE(cg->via_target_root);
  EXPECT_EQ(cg->dir, "/host/sys/fs/cgroup/kubepods/podB/ctrY");
  EXPECT_EQ(cgfs.Read(*cg).usage, 200000000u);
  EXPECT_EQ(cgfs.PressureFile(77), "/host/sys/fs/cgroup/kubepods/podB/ctrY/memory.pressure");
  // A sibling container of our own pod ("/../ctrZ"), and nothing above the mount.
  WriteV2Cgroup(r, "/host/sys/fs/cgroup/kubepods/podA/ctrZ", "max\n", "5\n", "");
  r.Write("/proc/78/cgroup", "0::/../ctrZ\n");
  ASSERT_TRUE(cgfs.FindMemoryCgroup(78));
  EXPECT_EQ(cgfs.FindMemoryCgroup(78)->dir, "/host/sys/fs/cgroup/kubepods/podA/ctrZ");
  r.Write("/proc/79/cgroup", "0::/../../../../x\n");
  EXPECT_FALSE(cgfs.FindMemoryCgroup(79));
}

TEST(CgroupFs, AFifoIsRefusedWithoutBlocking) {
  // A FIFO planted where a counter should be: open(2) of a FIFO without a
  // writer would wait for one forever, and with it the single watch loop.
  FakeRoot r;
  fs::create_directories(r.root() + "/sys/fs/cgroup/app");
  ASSERT_EQ(::mkfifo((r.root() + "/sys/fs/cgroup/app/memory.current").c_str(), 0600), 0);
  CgroupFs cgfs(r.root());
  EXPECT_FALSE(cgfs.ReadSmallFile("/sys/fs/cgroup/app/memory.current"));
  errno = 0;
  EXPECT_FALSE(OpenRegularFile(r.root() + "/sys/fs/cgroup/app/memory.current").valid());
  EXPECT_EQ(errno, EINVAL);
  // Nor does it pass for the cgroup's required file.
  r.Write("/proc/self/mountinfo", kV2Mountinfo);
  r.Write("/proc/5/cgroup", "0::/app\n");
  EXPECT_FALSE(cgfs.FindMemoryCgroup(5));
}

TEST(CgroupFs, ASymlinkIsNotFollowed) {
  FakeRoot r;
  r.Write("/etc/secret", "4242\n");
  r.Write("/proc/self/mountinfo", kV2Mountinfo);
  r.Write("/proc/5/cgroup", "0::/app\n");
  fs::create_directories(r.root() + "/sys/fs/cgroup/app");
  fs::create_symlink(r.root() + "/etc/secret", r.root() + "/sys/fs/cgroup/app/memory.current");
  fs::create_symlink(r.root() + "/etc/secret", r.root() + "/sys/fs/cgroup/app/memory.max");
  CgroupFs cgfs(r.root());
  EXPECT_FALSE(cgfs.ReadSmallFile("/sys/fs/cgroup/app/memory.current"));
  errno = 0;
  EXPECT_FALSE(OpenRegularFile(r.root() + "/sys/fs/cgroup/app/memory.max", true).valid());
  EXPECT_EQ(errno, ELOOP);
  EXPECT_FALSE(cgfs.FindMemoryCgroup(5));
  EXPECT_EQ(cgfs.LimitOf(CgroupVersion::kV2, "/sys/fs/cgroup/app"), std::nullopt);
}

TEST(CgroupFs, V2TargetOutsideOurNamespaceThroughItsRoot) {
  // A sidecar (its own cgroup namespace) watching the other container of its
  // pod: the target's path is "/../app" for us, below none of our mounts;
  // the target's own mount of its cgroup shows root "/../app". Only when
  // asked for (TargetRoot::kAllow: watch without --host-root).
  FakeRoot r;
  r.Write("/proc/self/mountinfo", kV2Mountinfo);
  r.Write("/proc/77/cgroup", "0::/../app\n");
  r.Write("/proc/77/mountinfo",
          "20 1 0:40 / / rw - overlay overlay rw\n"
          "40 20 0:26 /../app /sys/fs/cgroup ro,nosuid - cgroup2 cgroup2 rw,nsdelegate\n");
  WriteV2Cgroup(r, "/sys/fs/cgroup", "max\n", "1\n", "");  // ours: must not be used
  WriteV2Cgroup(r, "/proc/77/root/sys/fs/cgroup", "268435456\n", "200000000\n",
                "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n");
  CgroupFs cgfs(r.root(), TargetRoot::kAllow);
  std::optional<MemoryCgroup> cg = cgfs.FindMemoryCgroup(77);
  ASSERT_TRUE(cg);
  EXPECT_TRUE(cg->via_target_root);
  EXPECT_EQ(cg->dir, "/proc/77/root/sys/fs/cgroup");
  EXPECT_EQ(cg->limit_dir, "/proc/77/root/sys/fs/cgroup");
  EXPECT_EQ(cgfs.Read(*cg).usage, 200000000u);
  EXPECT_EQ(cgfs.PressureFile(77), "/proc/77/root/sys/fs/cgroup/memory.pressure");
}

TEST(CgroupFs, HybridWithoutV1MemoryUsesNothingWhenV2HasNoMemoryController) {
  // The v2 hierarchy of a hybrid setup has memory.pressure but no memory
  // controller: no memory cgroup, but a pressure file.
  FakeRoot r;
  r.Write("/proc/self/mountinfo", kV1Mountinfo);
  r.Write("/proc/9/cgroup", "1:cpu:/\n0::/\n");
  r.Write("/sys/fs/cgroup/unified/memory.pressure", "some avg10=0.00\n");
  CgroupFs cgfs(r.root());
  EXPECT_FALSE(cgfs.FindMemoryCgroup(9));
  EXPECT_EQ(cgfs.PressureFile(9), "/sys/fs/cgroup/unified/memory.pressure");
  EXPECT_FALSE(cgfs.FindMemoryCgroup(10));  // no such process
}

TEST(CgroupFs, ThisMachine) {
  // Whatever this machine has, discovery of our own cgroup must not throw,
  // and a found cgroup must have readable usage.
  CgroupFs cgfs;
  std::optional<MemoryCgroup> cg = cgfs.FindMemoryCgroup(::getpid());
  if (!cg) GTEST_SKIP() << "no memory cgroup visible on this machine";
  EXPECT_TRUE(cgfs.Read(*cg).usage) << cg->dir;
}

}  // namespace
}  // namespace goheap2pprof
