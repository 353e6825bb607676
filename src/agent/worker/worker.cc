#include "agent/worker/worker.h"

#include <dirent.h>
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <thread>
#include <vector>

#include "agent/common/discovery.h"
#include "agent/common/go_query.h"
#include "agent/common/liveness.h"
#include "agent/worker/push_wire.h"
#include "agent/worker/runtime_stats_wire.h"
#include "agent/worker/sandbox.h"
#include "app/capture.h"
#include "app/capture_state.h"
#include "app/executable_analysis.h"
#include "app/goroutine_capture.h"
#include "app/output_format.h"
#include "app/process_source.h"
#include "app/run.h"
#include "app/runtime_stats.h"
#include "base/error.h"
#include "pprof/output.h"
#include "pprof/profile/delta.h"
#include "proc/block_cache_reader.h"
#include "proc/file_stamp.h"
#include "proc/procfs.h"

namespace goheap2pprof {
namespace {

constexpr uint32_t kRequestMagic = 0x67327271;  // "g2rq"
constexpr uint32_t kReplyMagic = 0x67327270;

struct RequestHeader {
  uint32_t magic;
  uint32_t op;
  int32_t pid;
  uint32_t payload_len;
};
struct ReplyHeader {
  uint32_t magic;
  int32_t error_kind;
  uint32_t message_len;
  uint32_t analyses;
  uint32_t retiring;
  uint32_t replaced;
  uint64_t body_len;
  uint64_t bytes_read;
  uint64_t start_time;
  uint64_t worker_ns;
  uint64_t cycle_plus_one;  // 0: no cycle
  // The owner, when owner_known: its cgroup path follows the message.
  uint32_t owner_known;
  uint32_t owner_uid;
  uint32_t owner_cgroup_len;
  uint32_t tables;
  uint32_t padding;
  uint64_t inflated_plus_one;  // 0: body is not gzipped text
};

bool WriteAll(int fd, const void* data, size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = write(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

// Reads exactly size bytes; deadline_ms < 0 waits forever.
bool ReadAll(int fd, void* data, size_t size, int64_t deadline_ms, bool* timed_out) {
  char* p = static_cast<char*>(data);
  while (size > 0) {
    if (deadline_ms >= 0) {
      int64_t left = deadline_ms - MonotonicMillis();
      if (left <= 0) {
        *timed_out = true;
        return false;
      }
      pollfd pfd{fd, POLLIN, 0};
      int r = poll(&pfd, 1, static_cast<int>(std::min<int64_t>(left, 1000)));
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) return false;
      if (r == 0) continue;
    }
    ssize_t n = read(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

// Analyses of executables, kept between requests so that the processes of
// one binary cost one analysis. Keyed by what identifies the file the
// target runs: the running file's path and inode as its maps show them (for
// a qemu-user guest, the guest program), its GNU build ID, and the stamp of
// /proc/<pid>/exe. Bounded: the least recently used analysis goes first.
class AnalysisCache {
 public:
  static constexpr size_t kMaxEntries = kWorkerCachedEntries;

  // The analysis for source's executable, and whether it had to be made.
  std::pair<std::shared_ptr<const ExecutableAnalysis>, bool> Get(const CaptureSource& source) {
    const TargetExecutable& exe = source.executable();
    std::string key =
        exe.running.path + "\n" + std::to_string(exe.running.inode) + "\n" + exe.gnu_build_id;
    if (std::optional<FileStamp> stamp =
            FileStamp::OfPath(ProcPath(source.identity().pid, "exe"))) {
      key += "\n" + stamp->ToString();
    }
    ++clock_;
    for (Entry& e : entries_) {
      if (e.key == key) {
        e.used = clock_;
        return {e.analysis, false};
      }
    }
    std::shared_ptr<const ExecutableAnalysis> analysis = ExecutableAnalysis::Create(exe.elf);
    if (entries_.size() >= kMaxEntries) {
      auto oldest =
          std::min_element(entries_.begin(), entries_.end(),
                           [](const Entry& a, const Entry& b) { return a.used < b.used; });
      entries_.erase(oldest);
    }
    entries_.push_back({key, analysis, clock_});
    return {analysis, true};
  }

 private:
  struct Entry {
    std::string key;
    std::shared_ptr<const ExecutableAnalysis> analysis;
    uint64_t used = 0;
  };
  std::vector<Entry> entries_;
  uint64_t clock_ = 0;
};

AnalysisCache& Analyses() {
  static AnalysisCache cache;
  return cache;
}

#if GOHEAP2PPROF_TEST_SEAMS
// Test seams of the server's end-to-end tests, read by workers only:
// GOHEAP2PPROF_SERVE_SEAM=<what>:<pid> applies to captures (not probes) of
// that pid only. "crash" aborts, "spin" burns CPU without end (the server's
// timeout or RLIMIT_CPU ends it), "hog" allocates past RLIMIT_AS, "syscall"
// makes a system call outside the seccomp filter, "open-write" tries to
// create /tmp/goheap2pprof-serve-seam-<pid>, "open-kmsg" tries to open
// /proc/kmsg and fails the capture saying what that gave, "bomb" answers a
// successful capture with a gzip bomb (1536 MiB of zeros in 1.5 MB) instead
// of its body, as a compromised worker could. "pause-before-walk=MS"
// and "pause-after-walk=MS" announce on stderr "test seam: pausing MS ms
// before (after) the walk of pid P" and sleep, once the source is open
// (identity, address space, maps, executable and its analysis), or after
// the walk before the final identity check: a test ends or replaces the
// target meanwhile.
struct ServeSeam {
  std::string what;
  int pause_ms = 0;
};

std::optional<ServeSeam> ServeSeamFor(pid_t pid) {
  const char* env = std::getenv("GOHEAP2PPROF_SERVE_SEAM");
  if (!env) return std::nullopt;
  std::string_view seam(env);
  size_t colon = seam.rfind(':');
  if (colon == std::string_view::npos || seam.substr(colon + 1) != std::to_string(pid)) {
    return std::nullopt;
  }
  seam = seam.substr(0, colon);
  ServeSeam out;
  size_t eq = seam.find('=');
  out.what = std::string(seam.substr(0, eq));
  if (eq != std::string_view::npos) {
    std::optional<int64_t> ms = GoParseInt(seam.substr(eq + 1));
    if (!ms || *ms < 0 || *ms > 600000) {
      throw Error(ErrorKind::kUsage, "GOHEAP2PPROF_SERVE_SEAM: bad pause in \"", env, "\"");
    }
    out.pause_ms = static_cast<int>(*ms);
  }
  return out;
}

void Misbehave(const ServeSeam& seam, pid_t pid) {
  if (seam.what == "crash") std::abort();
  if (seam.what == "spin") {
    volatile uint64_t x = 0;
    while (true) x = x + 1;
  }
  if (seam.what == "hog") {
    // More than any RLIMIT_AS the tests give: ends in std::bad_alloc.
    std::vector<char> hog(size_t{64} << 30);
    hog[0] = 1;
  }
  if (seam.what == "open-write") {
    // What the filter refuses: creating a file. Refused, the capture fails
    // with the reason; allowed, it goes on and the file is there.
    const std::string path = "/tmp/goheap2pprof-serve-seam-" + std::to_string(pid);
    const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (fd >= 0) {
      close(fd);
      return;
    }
    throw Error(ErrorKind::kInternal, "test seam: open(", path,
                ", O_WRONLY|O_CREAT): ", std::strerror(errno));
  }
  if (seam.what == "open-kmsg") {
    // What plain root's worker could do before it dropped root: open the
    // kernel log (reading it consumes it). Fails the capture either way,
    // saying what the open gave.
    const int fd = open("/proc/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    const std::string got = fd >= 0 ? "opened" : std::strerror(errno);
    if (fd >= 0) close(fd);
    throw Error(ErrorKind::kInternal, "test seam: open(/proc/kmsg, O_RDONLY): ", got);
  }
  if (seam.what == "syscall") {
    // socket(2) is not in the filter: the kernel kills the worker (SIGSYS).
    (void)syscall(SYS_socket, AF_INET, SOCK_STREAM, 0);
  }
}

// The "bomb" seam's body: concatenated gzip members, which readers
// (Gunzip, Go's) take as one stream.
void MaybeBomb(const std::optional<ServeSeam>& seam, std::string& body) {
  if (!seam || seam->what != "bomb") return;
  const std::string member = Gzip(std::string(size_t{1} << 20, '\0'));
  body.clear();
  for (int i = 0; i < 1536; ++i) body += member;
}

void PauseBeforeWalk(const std::optional<ServeSeam>& seam, pid_t pid) {
  if (!seam || seam->what != "pause-before-walk") return;
  std::cerr << "goheap2pprof worker: test seam: pausing " << seam->pause_ms
            << " ms before the walk of pid " << pid << std::endl;
  std::this_thread::sleep_for(std::chrono::milliseconds(seam->pause_ms));
}

// source with the CLI's test seams (GOHEAP2PPROF_TEST_SEAM, applied to
// every pid) and the pause after the walk of GOHEAP2PPROF_SERVE_SEAM.
std::unique_ptr<CaptureSource> WithServeSeams(std::unique_ptr<CaptureSource> source,
                                              const std::optional<ServeSeam>& seam) {
  if (const char* spec = std::getenv("GOHEAP2PPROF_TEST_SEAM")) {
    static std::ostringstream seam_log;  // the announcements are for the CLI's tests
    source = WithTestSeams(std::move(source), ParseTestSeams(spec), seam_log);
  }
  if (seam && seam->what == "pause-after-walk") {
    source = WithTestSeams(std::move(source), TestSeams{.pause_after_walk_ms = seam->pause_ms},
                           std::cerr);
  }
  return source;
}
#else
// A release build has no test seam (CMake option GOHEAP2PPROF_TEST_SEAMS).
struct ServeSeam {};
std::optional<ServeSeam> ServeSeamFor(pid_t) { return std::nullopt; }
void Misbehave(const ServeSeam&, pid_t) {}
void MaybeBomb(const std::optional<ServeSeam>&, std::string&) {}
void PauseBeforeWalk(const std::optional<ServeSeam>&, pid_t) {}
std::unique_ptr<CaptureSource> WithServeSeams(std::unique_ptr<CaptureSource> source,
                                              const std::optional<ServeSeam>&) {
  return source;
}
#endif

// Per-process capture states (app/capture_state.h), kept between requests so
// that a process scraped again costs its counters and whatever changed.
// Bounded like the analyses: the least recently captured process goes
// first. A state checks itself that it is still its process's (start time,
// executable, headers), so a pid reused by another program starts afresh.
class CaptureStates {
 public:
  static constexpr size_t kMaxEntries = kWorkerCachedEntries;
  // The states' memory, bounded well below the worker's address-space
  // limit: a 250k-bucket process's state holds about 100 MiB.
  static constexpr size_t kMaxBytes = size_t{384} << 20;

  ProcessCaptureState& For(pid_t pid) {
    ++clock_;
    // States of processes that are gone are of no use any more.
    std::erase_if(entries_, [pid](const Entry& e) {
      return e.pid != pid && ProcessLiveness(e.pid, std::nullopt) == Liveness::kGone;
    });
    size_t bytes = 0;
    for (const Entry& e : entries_) bytes += e.state->ApproximateBytes();
    while (bytes > kMaxBytes && !entries_.empty()) {
      auto oldest =
          std::min_element(entries_.begin(), entries_.end(),
                           [](const Entry& a, const Entry& b) { return a.used < b.used; });
      bytes -= std::min(bytes, oldest->state->ApproximateBytes());
      entries_.erase(oldest);
    }
    for (Entry& e : entries_) {
      if (e.pid == pid) {
        e.used = clock_;
        return *e.state;
      }
    }
    if (entries_.size() >= kMaxEntries) {
      auto oldest =
          std::min_element(entries_.begin(), entries_.end(),
                           [](const Entry& a, const Entry& b) { return a.used < b.used; });
      entries_.erase(oldest);
    }
    entries_.push_back({pid, std::make_unique<ProcessCaptureState>(), clock_});
    return *entries_.back().state;
  }

 private:
  struct Entry {
    pid_t pid = 0;
    std::unique_ptr<ProcessCaptureState> state;
    uint64_t used = 0;
  };
  std::vector<Entry> entries_;
  uint64_t clock_ = 0;
};

CaptureStates& States() {
  static CaptureStates states;
  return states;
}

// --exe and --force of the watch that started this worker; set once at start.
ExecutableOptions& Executable() {
  static ExecutableOptions executable;
  return executable;
}

// The live process as a capture source, with the test seams of test builds.
// Records the target's start time in reply.
std::unique_ptr<CaptureSource> OpenSource(pid_t pid, const std::optional<ServeSeam>& seam,
                                          WorkerReply& reply) {
  const ProcessIdentity id = IdentifyLiveProcess(pid);
  reply.start_time = id.start_time;
  return WithServeSeams(OpenProcessSource(id, Executable()), seam);
}

// Discovery's Go-process test: the Go version and build ID the engine finds
// in pid's executable, i.e. what a capture would use. Here, in the worker,
// because it parses the executable, which the target's owner controls, and
// so that the analysis it makes is kept for the captures that follow.
// Throws what opening a capture throws (kNoSuchProcess, kNotGo, ...).
void Probe(pid_t pid, WorkerReply& reply) {
  const ProcessIdentity id = IdentifyLiveProcess(pid);
  const std::unique_ptr<CaptureSource> source = OpenProcessSource(id, {});
  auto [analysis, fresh] = Analyses().Get(*source);
  reply.analyses = fresh ? 1 : 0;
  std::string build_id = analysis->elf().GoBuildId();
  if (build_id.empty()) build_id = source->executable().gnu_build_id;
  reply.body = "go_version=" + analysis->go_version() + "\nbuild_id=" + build_id + "\n";
}

// A capture (`now`, serialized) minus the base profile the request carries,
// gzipped. The base went through the server, which got it from a worker: it
// is decoded as untrusted bytes, and anything wrong with it fails this
// request.
std::string DeltaBody(const WorkerRequest& request, const std::string& now) {
  try {
    // The base is a capture of the same process moments earlier, and a
    // process's buckets only accumulate: it is no larger than this one in
    // practice. The bound keeps a gzip bomb from filling the worker.
    const std::string base = Gunzip(request.payload, 2 * now.size() + (size_t{16} << 20));
    return Gzip(EncodedDeltaProfile(base, now));
  } catch (const std::exception& e) {
    // Boundary: the base the request carries, untrusted bytes. Whatever
    // it made fail (its gzip, its decoding, the memory it took) fails this
    // request as a bad base, said as such.
    if (dynamic_cast<const std::bad_alloc*>(&e) != nullptr) {
      throw Error(ErrorKind::kInternal,
                  "failed to compute delta: it exceeded the worker's memory limit");
    }
    if (dynamic_cast<const Error*>(&e) == nullptr) throw;
    throw Error(ErrorKind::kMalformed, "failed to compute delta: ", e.what());
  }
}

// How large a push state may grow once gunzipped: a key per sample of
// 8 bytes per frame, against a frame's one or two bytes in the profile.
size_t PushStateBound(size_t profile_bytes) { return 16 * profile_bytes + (size_t{16} << 20); }

// push's profiles of this capture (agent/worker/push_wire.h), with the
// names the process gives itself (OTEL_CTX), read here, confined.
std::string PushBody(const WorkerRequest& request, const FinishedProfile& profile,
                     std::optional<uint32_t> cycle, CaptureSource& source) {
  const PushWork work = DecodePushWork(request.payload, request.payload.size());
  const pb::Profile& cumulative = profile.get();
  PushMade made =
      MakePushProfiles(cumulative, work, cycle, PushStateBound(cumulative.ByteSizeLong()));
  made.otel = ReadOtelProcessIdentity(source);
  return EncodePushMade(made);
}

// push's profiles of a profile a watch trigger captured, which the agent
// passed on: decoded as untrusted bytes, bounded as a delta's base is.
void PushConvert(const WorkerRequest& request, WorkerReply& reply) {
  const PushWork work = DecodePushWork(request.payload, request.payload.size());
  const std::string raw = Gunzip(work.profile_gz, 32 * work.profile_gz.size() + (size_t{16} << 20));
  pb::Profile cumulative;
  if (!cumulative.ParseFromString(raw)) {
    throw Error(ErrorKind::kMalformed, "push: the trigger's profile does not parse");
  }
  reply.body = EncodePushMade(
      MakePushProfiles(std::move(cumulative), work, std::nullopt, PushStateBound(raw.size())));
}

// The output format an op's reply is rendered in, where it is one of the
// command line's (app/output_format.h); the other ops have their own bodies.
OutputFormat FormatOf(WorkerOp op) {
  switch (op) {
    case WorkerOp::kHeapDebugText:
      return OutputFormat::kDebugText;
    case WorkerOp::kFlamegraph:
      return OutputFormat::kFlamegraph;
    default:
      return OutputFormat::kPprof;
  }
}

// What a capture and a memory-statistics read both begin with: the
// request's seams, the live process opened (setting *identified once it was
// found alive, so that a later "no such process" can be told apart from
// "never was"), its owner and its executable's analysis.
struct OpenedTarget {
  std::unique_ptr<CaptureSource> source;
  std::shared_ptr<const ExecutableAnalysis> analysis;
  ProcessOwner owner;
};

OpenedTarget OpenForRead(const WorkerRequest& request, const std::optional<ServeSeam>& seam,
                         WorkerReply& reply, bool* identified, const char* what) {
  if (seam) Misbehave(*seam, request.pid);
  OpenedTarget t;
  t.source = OpenSource(request.pid, seam, reply);
  *identified = true;
  // What the allow-list judges, read while the source holds the address
  // space anchor: the read's final identity check proves it came from the
  // process the answer is for (a pid reused or an exec in place since then
  // fails it, 410).
  std::optional<ProcessOwner> owner = ReadProcessOwner(request.pid);
  if (!owner) {
    throw Error(ErrorKind::kNoSuchProcess, "process ", request.pid, " exited during the ", what);
  }
  t.owner = std::move(*owner);
  auto [analysis, fresh] = Analyses().Get(*t.source);
  t.analysis = std::move(analysis);
  reply.analyses = fresh ? 1 : 0;
  PauseBeforeWalk(seam, request.pid);
  return t;
}

// The request's profile, in the form its op asks for.
void Capture(const WorkerRequest& request, const std::optional<ServeSeam>& seam, WorkerReply& reply,
             bool* identified) {
  OpenedTarget t = OpenForRead(request, seam, reply, identified, "capture");
  FormattedCapture as(OutputOptions{
      .format = FormatOf(request.op), .sample_index = request.payload, .sample_type_links = true});
  CaptureOptions options;
  CaptureReport report;
  as.Prepare(*t.source, *t.analysis, options, report);
  for (const std::string& w : report.warnings) {
    std::cerr << "goheap2pprof worker: pid " << request.pid << ": " << w << "\n";
  }
  CaptureResult result = Capture(*t.source, t.analysis, options, report, States().For(request.pid));
  reply.bytes_read = result.report.bytes_read;
  reply.cycle = result.report.cycle;
  reply.tables = static_cast<uint32_t>(result.report.tables);
  if (request.op == WorkerOp::kHeapDebugText) {
    const std::string text = as.Render(result.profile.get(), {.pid = request.pid});
    // Gzipped: the text is many times the profile (184 MB at 131k
    // buckets), and the server relays it inflated a chunk at a time.
    reply.inflated_size = text.size();
    reply.body = Gzip(text);
  } else if (request.op == WorkerOp::kHeapDelta || request.op == WorkerOp::kAllocsDelta) {
    if (request.op == WorkerOp::kAllocsDelta) result.profile.SetDefaultSampleType("alloc_space");
    reply.body = DeltaBody(request, result.profile.Serialize());
  } else if (request.op == WorkerOp::kPush) {
    reply.body = PushBody(request, result.profile, reply.cycle, *t.source);
  } else if (request.op == WorkerOp::kFlamegraph) {
    reply.body = as.Render(result.profile.get(), {.pid = request.pid});
  } else if (request.op == WorkerOp::kAllocs) {
    // The runtime's writeAlloc differs from writeHeap only here.
    result.profile.SetDefaultSampleType("alloc_space");
    reply.body = EncodeProfile(result.profile);
  } else {
    reply.body = EncodeProfile(result.profile);
  }
  MaybeBomb(seam, reply.body);
  // Only now, the final identity check having passed: a failed capture
  // carries no owner.
  reply.owner = std::move(t.owner);
}

bool IsGoroutineOp(WorkerOp op) {
  return op == WorkerOp::kGoroutine || op == WorkerOp::kGoroutineDebug1 ||
         op == WorkerOp::kGoroutineDebug2 || op == WorkerOp::kGoroutineDelta ||
         op == WorkerOp::kPushGoroutine;
}

// serve's /debug/pprof/goroutine: the CLI's one-shot capture under the rules
// of a heap capture (seams, owner, final identity check), rendered by the
// functions `goheap2pprof goroutines` uses. The texts go gzipped, as the
// heap's debug=1 text: a dump of many goroutines is many times its gzip.
void CaptureGoroutineProfile(const WorkerRequest& request, const std::optional<ServeSeam>& seam,
                             WorkerReply& reply, bool* identified) {
  OpenedTarget t = OpenForRead(request, seam, reply, identified, "capture");
  GoroutineCaptureOptions options;
  options.dump = request.op == WorkerOp::kGoroutineDebug2;
  const GoroutineCapture c = CaptureGoroutines(*t.source, *t.analysis, {}, options);
  for (const std::string& w : c.warnings) {
    std::cerr << "goheap2pprof worker: pid " << request.pid << ": " << w << "\n";
  }
  reply.bytes_read = c.snapshot.stats.bytes_read;
  if (options.dump || request.op == WorkerOp::kGoroutineDebug1) {
    const std::string text =
        options.dump ? GoroutineDump(*t.analysis, c) : GoroutineText(*t.analysis, c);
    reply.inflated_size = text.size();
    reply.body = Gzip(text);
  } else {
    const pb::Profile profile = GoroutineProfile(*t.source, *t.analysis, c);
    if (request.op == WorkerOp::kPushGoroutine) {
      const PushWork work = DecodePushWork(request.payload, request.payload.size());
      PushMade made = MakeGoroutinePushProfiles(profile, work);
      made.otel = ReadOtelProcessIdentity(*t.source);
      reply.body = EncodePushMade(made);
    } else {
      reply.body = request.op == WorkerOp::kGoroutineDelta
                       ? DeltaBody(request, profile.SerializeAsString())
                       : EncodeProfile(profile);
    }
  }
  MaybeBomb(seam, reply.body);
  reply.owner = std::move(t.owner);
}

// The memory statistics of request.pid, under the rules of a capture: the
// same seams, the owner read while the source holds the address-space
// anchor, and the process proven to be the one the source opened after the
// read (a pid reused or an exec in place fails it, 410).
void ReadStats(const WorkerRequest& request, const std::optional<ServeSeam>& seam,
               WorkerReply& reply, bool* identified) {
  OpenedTarget t = OpenForRead(request, seam, reply, identified, "read");
  const GoRuntimeStats stats = ReadGoRuntimeStats(*t.source, *t.analysis);
  const OtelProcessIdentity otel = ReadOtelProcessIdentity(*t.source);
  t.source->CheckSameProcess();
  reply.body = EncodeRuntimeStats(stats, otel);
  reply.owner = std::move(t.owner);
}

// After a capture found its process gone: whether a live process has the
// pid now. Then the process the request was answered for was replaced
// (its pid reused, or an exec in place), not merely ended.
// A pid whose stat cannot be read or parsed is answered as gone (404), the
// safe side of "replaced".
bool PidIsLive(pid_t pid) { return ProcessLiveness(pid, std::nullopt) == Liveness::kRunning; }

// The reply for a request that failed with e (an Error or bad_alloc;
// anything else is rethrown, ending the worker as before).
WorkerReply FailedReply(const WorkerRequest& request, const std::exception& e, uint64_t start_time,
                        bool identified) {
  WorkerReply failed;
  if (dynamic_cast<const std::bad_alloc*>(&e) != nullptr) {
    failed.error_kind = static_cast<int32_t>(ErrorKind::kInternal);
    failed.message = "the capture exceeded the worker's memory limit";
    return failed;
  }
  const Error* error = dynamic_cast<const Error*>(&e);
  if (error == nullptr) throw;
  failed.start_time = start_time;
  failed.error_kind = static_cast<int32_t>(error->kind());
  failed.message = error->what();
  failed.replaced =
      error->kind() == ErrorKind::kNoSuchProcess && identified && PidIsLive(request.pid);
  return failed;
}

WorkerReply Handle(const WorkerRequest& request) {
  WorkerReply reply;
  bool identified = false;
  try {
    if (request.op == WorkerOp::kProbe) {
      Probe(request.pid, reply);
    } else if (request.op == WorkerOp::kPushConvert) {
      PushConvert(request, reply);
    } else if (request.op == WorkerOp::kRuntimeStats) {
      ReadStats(request, ServeSeamFor(request.pid), reply, &identified);
    } else if (IsGoroutineOp(request.op)) {
      CaptureGoroutineProfile(request, ServeSeamFor(request.pid), reply, &identified);
    } else {
      Capture(request, ServeSeamFor(request.pid), reply, &identified);
    }
    return reply;
  } catch (const std::exception& e) {
    // Boundary: one request in the worker. Its error, or running out of
    // the worker's memory, is the reply; the worker serves the next.
    return FailedReply(request, e, reply.start_time, identified);
  }
}

// Closes descriptors first..last. close_range(2) (Linux 5.9) in one call;
// on older kernels, every descriptor /proc/self/fd lists in the range, or
// failing that, every number below the descriptor limit.
void CloseDescriptors(int64_t first, unsigned last) {
#ifdef SYS_close_range
  if (syscall(SYS_close_range, static_cast<unsigned>(first), last, 0) == 0) return;
#endif
  std::vector<int> open_fds;
  if (DIR* dir = opendir("/proc/self/fd")) {
    while (const dirent* entry = readdir(dir)) {
      const std::optional<int64_t> n = GoParseInt(entry->d_name);
      if (n && *n >= first && *n <= int64_t{last} && *n != dirfd(dir)) {
        open_fds.push_back(static_cast<int>(*n));
      }
    }
    closedir(dir);
  } else {
    rlimit rl{};
    const rlim_t end = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_max != RLIM_INFINITY
                           ? std::min<rlim_t>(rl.rlim_max, rlim_t{1} << 20)
                           : rlim_t{1} << 20;
    for (int64_t n = first; n < static_cast<int64_t>(end) && n <= int64_t{last}; ++n) {
      open_fds.push_back(static_cast<int>(n));
    }
  }
  for (int n : open_fds) close(n);
}

double CpuSecondsUsed() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

// Reads, handles and answers one request; false when the worker should end
// (EOF, a broken socket, or retiring).
bool ServeOneRequest(int fd, const WorkerLimits& limits) {
  WorkerRequest request;
  if (!ReadWorkerRequest(fd, request, limits.max_reply_bytes)) return false;
  const int64_t started = MonotonicNanos();
  WorkerReply reply = Handle(request);
  if (reply.body.size() > limits.max_reply_bytes) {
    // The server would not read it: say why instead.
    WorkerReply refused;
    refused.start_time = reply.start_time;
    refused.error_kind = static_cast<int32_t>(ErrorKind::kInternal);
    refused.message = "the capture's reply is " + std::to_string(reply.body.size()) +
                      (reply.inflated_size ? " bytes gzipped" : " bytes") +
                      ", more than the limit of " + std::to_string(limits.max_reply_bytes) +
                      " (--max-capture-bytes)";
    reply = std::move(refused);
  }
  reply.worker_ns = static_cast<uint64_t>(MonotonicNanos() - started);
  // RLIMIT_CPU counts the worker's whole life: retire at half of it, so a
  // capture never starts without its full budget. The pool starts another.
  reply.retiring = CpuSecondsUsed() > static_cast<double>(limits.cpu_seconds) / 2;
  return WriteWorkerReply(fd, reply) && !reply.retiring;
}

}  // namespace

int64_t MonotonicNanos() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

int64_t MonotonicMillis() { return MonotonicNanos() / 1000000; }

void KeepToRequestedProcess(const ProcessFacts& requested, const ProcessFilter& filter,
                            WorkerReply& reply) {
  const std::string pid = std::to_string(requested.pid);
  // start_time 0: the worker found no process to identify; its error says so.
  const bool replaced = reply.start_time != 0 && reply.start_time != requested.start_time;
  // A failed capture of the requested process: its error is the answer.
  if (!replaced && reply.error_kind != 0) return;
  // The same process, but without an owner or one the filter no longer
  // admits (its uid or cgroup changed): answered as filtered processes are.
  if (!replaced && reply.owner && filter.Admits(requested.pid, *reply.owner)) return;
  WorkerReply refused;
  refused.error_kind = static_cast<int32_t>(ErrorKind::kNoSuchProcess);
  refused.start_time = reply.start_time;
  refused.replaced = replaced;
  refused.message = replaced ? "pid " + pid + " named another process when the capture began"
                             : "no such process: " + pid;
  reply = std::move(refused);
}

bool WriteWorkerRequest(int fd, const WorkerRequest& request) {
  if (request.payload.size() > UINT32_MAX) return false;
  RequestHeader h{kRequestMagic, static_cast<uint32_t>(request.op), request.pid,
                  static_cast<uint32_t>(request.payload.size())};
  return WriteAll(fd, &h, sizeof(h)) &&
         WriteAll(fd, request.payload.data(), request.payload.size());
}

bool ReadWorkerRequest(int fd, WorkerRequest& request, uint64_t max_payload) {
  RequestHeader h{};
  bool timed_out = false;
  if (!ReadAll(fd, &h, sizeof(h), -1, &timed_out) || h.magic != kRequestMagic) return false;
  if (h.payload_len > max_payload) return false;
  request.op = static_cast<WorkerOp>(h.op);
  request.pid = h.pid;
  request.payload.resize(h.payload_len);
  return ReadAll(fd, request.payload.data(), request.payload.size(), -1, &timed_out);
}

bool WriteWorkerReply(int fd, const WorkerReply& reply) {
  ReplyHeader h{kReplyMagic,
                reply.error_kind,
                static_cast<uint32_t>(reply.message.size()),
                reply.analyses,
                reply.retiring ? 1u : 0u,
                reply.replaced ? 1u : 0u,
                reply.body.size(),
                reply.bytes_read,
                reply.start_time,
                reply.worker_ns,
                reply.cycle ? uint64_t{*reply.cycle} + 1 : 0,
                reply.owner ? 1u : 0u,
                reply.owner ? static_cast<uint32_t>(reply.owner->uid) : 0u,
                reply.owner ? static_cast<uint32_t>(reply.owner->cgroup.size()) : 0u,
                reply.tables,
                0,
                reply.inflated_size ? *reply.inflated_size + 1 : 0};
  const std::string_view cgroup = reply.owner ? std::string_view(reply.owner->cgroup) : "";
  return WriteAll(fd, &h, sizeof(h)) && WriteAll(fd, reply.message.data(), reply.message.size()) &&
         WriteAll(fd, cgroup.data(), cgroup.size()) &&
         WriteAll(fd, reply.body.data(), reply.body.size());
}

ReplyReadError ReadWorkerReply(int fd, WorkerReply& reply, int64_t deadline_ms, uint64_t max_body) {
  bool timed_out = false;
  auto failed = [&] { return timed_out ? ReplyReadError::kTimedOut : ReplyReadError::kBroken; };
  ReplyHeader h{};
  if (!ReadAll(fd, &h, sizeof(h), deadline_ms, &timed_out) || h.magic != kReplyMagic) {
    return failed();
  }
  if (h.message_len > 65536 || h.owner_cgroup_len > 65536) return ReplyReadError::kBroken;
  if (h.body_len > max_body) return ReplyReadError::kTooLarge;
  reply.error_kind = h.error_kind;
  reply.analyses = h.analyses;
  reply.retiring = h.retiring != 0;
  reply.replaced = h.replaced != 0;
  reply.bytes_read = h.bytes_read;
  reply.start_time = h.start_time;
  reply.worker_ns = h.worker_ns;
  reply.tables = h.tables;
  reply.cycle.reset();
  if (h.cycle_plus_one != 0) reply.cycle = static_cast<uint32_t>(h.cycle_plus_one - 1);
  reply.inflated_size.reset();
  if (h.inflated_plus_one != 0) reply.inflated_size = h.inflated_plus_one - 1;
  reply.message.resize(h.message_len);
  std::string cgroup(h.owner_cgroup_len, '\0');
  if (!ReadAll(fd, reply.message.data(), reply.message.size(), deadline_ms, &timed_out) ||
      !ReadAll(fd, cgroup.data(), cgroup.size(), deadline_ms, &timed_out)) {
    return failed();
  }
  reply.owner.reset();
  if (h.owner_known != 0) reply.owner = ProcessOwner{h.owner_uid, std::move(cgroup)};
  // The declared length is the worker's word: the buffer grows with the
  // bytes that actually arrive, 1 MiB at a time (its capacity at most twice
  // what arrived), so a worker that declares much and sends little costs
  // little.
  reply.body.clear();
  constexpr uint64_t kStep = uint64_t{1} << 20;
  while (reply.body.size() < h.body_len) {
    const size_t at = reply.body.size();
    const size_t n = static_cast<size_t>(std::min(kStep, h.body_len - at));
    reply.body.resize(at + n);
    if (!ReadAll(fd, reply.body.data() + at, n, deadline_ms, &timed_out)) return failed();
  }
  return ReplyReadError::kNone;
}

namespace {

// What the requests allocated and freed goes back to the system once the
// worker has had no request for kIdleTrimMs, not after each one: a delta
// of a big profile takes hundreds of MiB for a moment, and an idle worker
// should not keep them, but a busy one would only fault the same pages in
// again, each cleared by the kernel (a 250k-bucket repeated capture: 2,300
// to 3,300 minor faults and clear_page 12% of the worker's CPU, perf
// record, 2026-12-03).
constexpr int kIdleTrimMs = 10000;

void TrimWhenIdle(int fd) {
  pollfd p{fd, POLLIN, 0};
  int rc = 0;
  do {
    rc = poll(&p, 1, kIdleTrimMs);
  } while (rc < 0 && errno == EINTR);
  if (rc == 0) {
    malloc_trim(0);
    BlockCacheReader::ReleaseKeptBuffer();
  }
}

}  // namespace

int RunCaptureWorker(int fd, const WorkerLimits& limits, const ExecutableOptions& executable) {
  Executable() = executable;
  // Everything but the request socket and stderr is closed: the server's
  // listening socket and its clients' sockets must not be reachable from a
  // worker. The pool already closed them before the exec; this holds for
  // any other way the worker is started.
  close(STDIN_FILENO);
  close(STDOUT_FILENO);
  if (fd > 3) CloseDescriptors(3, static_cast<unsigned>(fd - 1));
  CloseDescriptors(int64_t{fd} + 1, ~0U);
  try {
    EnterCaptureSandbox({limits.address_space_bytes, limits.cpu_seconds, limits.uid, limits.gid});
  } catch (const Error& e) {
    // Boundary: the worker process's own main (the pool reports its exit
    // status).
    std::cerr << "goheap2pprof worker: " << e.what() << "\n";
    return 10;
  }
  // A worker walks its targets again and again: each walk takes the last
  // one's buffer instead of clearing a fresh one (TrimWhenIdle gives it back).
  BlockCacheReader::KeepBuffersForReuse(true);
  while (ServeOneRequest(fd, limits)) TrimWhenIdle(fd);
  return 0;
}

}  // namespace goheap2pprof
