// Capture workers of `goheap2pprof serve`. The server runs privileged and the
// bytes it parses (the target's memory and executable) are controlled by
// whoever runs the target, so no parsing happens in the server: each capture
// runs in a worker process, a fresh exec of this binary (`goheap2pprof
// __capture-worker`), that confines itself before reading anything:
// RLIMIT_AS/RLIMIT_CPU/RLIMIT_NOFILE/RLIMIT_CORE, no_new_privs, and a seccomp
// filter that allows only what a capture needs (see agent/worker/sandbox.h). The
// server sends requests over a socket and relays the finished profile bytes.
//
// Workers are long-lived (a small pool, see agent/worker/pool.h) rather than forked
// per capture, so that an executable's analysis can be kept between captures
// of its processes; a worker that crashes, hangs or exceeds a limit is killed
// and replaced by the pool.
//
// The wire format is private to one build of the binary (the server execs
// itself): fixed-size little-endian headers, then the payloads. Both sides
// bound what they read: a request's payload and a reply's body are at most
// WorkerLimits::max_reply_bytes, and the server grows a reply's buffer as
// its bytes arrive rather than trusting the length the worker declares.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "agent/common/discovery.h"
#include "app/process_source.h"

namespace goheap2pprof {

// How many executables' analyses and processes' capture states a worker
// keeps between requests (the least recently used goes first); the pool
// routes by as many keys per worker (agent/worker/routing.h).
inline constexpr size_t kWorkerCachedEntries = 8;

enum class WorkerOp : uint32_t {
  kProbe = 1,          // is it Go? version, build ID (for discovery)
  kHeap = 2,           // gzipped heap profile, as /debug/pprof/heap
  kAllocs = 3,         // the same with default_sample_type alloc_space
  kHeapDebugText = 4,  // the ?debug=1 text
  // ?seconds=N: a capture now minus the base profile that the payload
  // carries (an earlier kHeap/kAllocs reply), gzipped, as net/http/pprof's
  // serveDeltaProfile computes it (pprof/profile/delta.h). Computed here so
  // that its memory is the worker's, confined and given back.
  kHeapDelta = 5,
  kAllocsDelta = 6,
  // The Go runtime's memory statistics (app/runtime_stats.h), encoded as
  // agent/worker/runtime_stats_wire.h says: serve's /pid/N/metrics, watch's records.
  kRuntimeStats = 7,
  // The flame graph page (pprof/flame_graph/flame_graph.h) of a heap capture, for the
  // sample type the payload names; rendered here, so that the privileged
  // server never parses a profile.
  kFlamegraph = 8,
  // push's profiles of a heap capture (agent/worker/push_wire.h): the
  // payload is a PushWork, the body a PushMade. Made here, so that the
  // privileged agent never decodes a profile.
  kPush = 9,
  // The same made from the PushWork's profile (a watch trigger's capture)
  // rather than a capture: no process is read.
  kPushConvert = 10,
  // The goroutine profile (app/goroutine_capture.h), as
  // /debug/pprof/goroutine serves it: gzipped (debug=0), its ?debug=1 text
  // and ?debug=2 dump (both gzipped text, relayed inflated as
  // kHeapDebugText's), and ?seconds=N's delta against the payload's base
  // (an earlier kGoroutine reply), rendered by the CLI's own functions.
  kGoroutine = 11,
  kGoroutineDebug1 = 12,
  kGoroutineDebug2 = 13,
  kGoroutineDelta = 14,
  // push's goroutine profile (--profiles goroutine): the payload is a
  // PushWork (its limits and backends), the body a PushMade of the
  // kGoroutine profile, trimmed for Pyroscope (agent/worker/push_wire.h).
  kPushGoroutine = 15,
};

struct WorkerRequest {
  WorkerOp op = WorkerOp::kHeap;
  int32_t pid = 0;
  // kHeapDelta/kAllocsDelta/kGoroutineDelta: the base profile, gzipped; kFlamegraph: the
  // sample type; kPush/kPushConvert/kPushGoroutine: an encoded PushWork.
  std::string payload;
};

struct WorkerReply {
  // 0 on success, else the ErrorKind of the failure, with its message.
  int32_t error_kind = 0;
  std::string message;
  // The profile, for kHeapDebugText and kGoroutineDebug1/2 the text gzipped, for kProbe
  // "key=value\n" lines, for kRuntimeStats an encoded GoRuntimeStats.
  std::string body;
  // Set when body is gzipped text that the server relays inflated (the
  // ?debug=1 text): its inflated length, the worker's word. Gzipped, a
  // text of several times --max-capture-bytes fits in a reply, and the
  // server never holds it whole (GunzipStream).
  std::optional<uint64_t> inflated_size;
  uint64_t bytes_read = 0;  // target memory read for this capture
  uint64_t start_time = 0;  // the target's start time (/proc/<pid>/stat)
  uint32_t analyses = 0;    // executable analyses this request needed (0: cached)
  bool retiring = false;    // the worker exits after this reply (CPU budget used)
  // With error kNoSuchProcess: the process the capture began with is gone
  // and its pid now names a live process (another one, or the same one
  // after an exec), which the server answers with 410 instead of 404.
  bool replaced = false;
  uint64_t worker_ns = 0;  // time from the request's arrival to the reply, in the worker
  // Of a capture: whether it built its profile's tables or reused its last
  // capture's (ProfileTablesOrigin), for serve's -v log.
  uint32_t tables = 0;
  // The profile cycle the capture read (runtime mProfCycle), for the push
  // agent, which pushes a process only when it advanced; nullopt when the
  // capture could not tell.
  std::optional<uint32_t> cycle;
  // Of a successful capture: what the allow-list judges (uid, cgroup) of
  // the process the capture read, read from /proc/<pid> after the capture
  // and before the capture's anchor proved, once more, that the pid still
  // named the process of start_time and its address space
  // (proc/address_space.h). The server applies its filter to this, not to
  // what the pid named when the request came.
  std::optional<ProcessOwner> owner;
};

// Holds a worker's reply to the request it answers: a request for
// `requested` (the process discovery found, pid and start time, filters
// passed) may be answered only with a capture of that process that the
// filter admits as the worker found it. A reply from another process under
// the pid (another start time) becomes kNoSuchProcess with `replaced` set
// (410); a success whose owner the filter refuses, or that carries no
// owner, becomes the plain kNoSuchProcess a filtered process gets (404).
// Either way the body is dropped.
void KeepToRequestedProcess(const ProcessFacts& requested, const ProcessFilter& filter,
                            WorkerReply& reply);

// Limits a worker applies to itself before it reads anything.
struct WorkerLimits {
  uint64_t address_space_bytes = uint64_t{2} << 30;
  uint64_t cpu_seconds = 60;  // over the worker's life; it retires itself at half
  // The largest reply body (a gzipped profile or text) a worker sends and
  // the server reads, and the largest request payload. The heap profile of
  // a 250k-bucket Go target is 0.8 MB gzipped and 9 MB raw (bench/README.md,
  // "serve memory"): 64 MiB holds even a profile that hardly compresses,
  // with room for deeper stacks, and bounds what the privileged server
  // holds per request.
  uint64_t max_reply_bytes = uint64_t{64} << 20;
  // The user and group a worker that starts as plain root becomes, keeping
  // only the capabilities a capture needs (agent/worker/sandbox.h); 0: it
  // stays root. 65534 is nobody/nogroup.
  uint32_t uid = 65534;
  uint32_t gid = 65534;
};

// Both sides of the socket. Return false on EOF or a malformed message.
bool WriteWorkerRequest(int fd, const WorkerRequest& request);
// False also when the payload exceeds max_payload.
bool ReadWorkerRequest(int fd, WorkerRequest& request, uint64_t max_payload);
bool WriteWorkerReply(int fd, const WorkerReply& reply);

enum class ReplyReadError {
  kNone,
  kBroken,    // EOF, a read error or a malformed header
  kTimedOut,  // the deadline passed first
  kTooLarge,  // the body declared more than max_body bytes; none was read
};
// Reads a reply, waiting at most until deadline_ms (CLOCK_MONOTONIC
// milliseconds), reading a body of at most max_body bytes into a buffer
// that grows as the bytes arrive.
ReplyReadError ReadWorkerReply(int fd, WorkerReply& reply, int64_t deadline_ms, uint64_t max_body);

// The worker's main: confines itself, then serves requests on fd until EOF.
// Every capture reads `executable` (watch's --exe, --force) when it names a
// file. Returns the process exit code.
int RunCaptureWorker(int fd, const WorkerLimits& limits, const ExecutableOptions& executable = {});

int64_t MonotonicMillis();
int64_t MonotonicNanos();

}  // namespace goheap2pprof
