// Serializing, gzipping and writing a profile so that a failed run never
// leaves a partial or truncated file: the bytes go to a temporary file in the
// destination directory, which is renamed over the destination only after
// everything was written and flushed.
#pragma once

#include <google/protobuf/io/zero_copy_stream.h>

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "base/expected.h"
#include "pprof/finished_profile.h"
#include "proto/profile.pb.h"

namespace goheap2pprof {

// gzip (RFC 1952) of data at ISA-L's fastest level that searches for
// matches (runtime/pprof uses Go's fastest, "BestSpeed"): one member,
// compressed in 1 MiB chunks on two threads (see output.cc).
std::string Gzip(std::string_view data);
// Inverse (concatenated members too), for tests and tools; throws
// Error(kMalformed) on a bad stream.
std::string Gunzip(std::string_view data, size_t max_size = size_t{1} << 31);
// The same with the Error returned, for callers that say whose bytes were bad.
Expected<std::string> TryGunzip(std::string_view data, size_t max_size);

// Gunzip a piece at a time, into the caller's buffer: for bytes relayed
// without ever holding the whole of them inflated (serve's ?debug=1 text,
// kept gzipped and inflated as the client reads). Its memory is zlib's
// state and window, about 40 KiB.
//
//   GunzipStream in(gzipped);  // gzipped must outlive in
//   while (size_t n = in.Read(chunk)) Send(chunk.first(n));
class GunzipStream {
 public:
  explicit GunzipStream(std::string_view gzipped);
  ~GunzipStream();
  GunzipStream(const GunzipStream&) = delete;
  GunzipStream& operator=(const GunzipStream&) = delete;
  // Up to out.size() more inflated bytes; 0 once the data has ended
  // (concatenated members are read as one). Throws Error(kMalformed) on a
  // corrupt or truncated stream.
  size_t Read(std::span<char> out);
  // The same, with the Error returned: for a relay, to which a worker's bad
  // stream is an expected outcome.
  Expected<size_t> TryRead(std::span<char> out);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Serialized, gzipped profile.
std::string EncodeProfile(const pb::Profile& profile);
std::string EncodeProfile(const FinishedProfile& profile);

// Checks, before any target memory is read, that `path` can be created
// (directory exists and is writable); throws Error(kIo) otherwise.
void CheckOutputWritable(const std::string& path);
// Writes data to path atomically; "-" means standard output. Throws
// Error(kIo) naming the path; on failure the destination is untouched.
void WriteOutput(const std::string& path, std::string_view data);
// Writes the gzipped profile to path the same way, serializing directly into
// the compressor (EncodeProfile's bytes, without holding them in memory).
void WriteProfile(const std::string& path, const pb::Profile& profile);
// Whether WriteProfile/WriteOutput would write path through a temporary
// file renamed at the end (not "-" or an existing non-regular file): only
// then can the bytes be produced while a capture runs and still never be
// seen partial.
bool WritesAtomically(const std::string& path);
// Writes the gzipped bytes that serialize (false: it failed) puts into the
// stream to path as WriteProfile does; for a capture that streams its
// samples while it builds them.
void WriteGzippedProfile(
    const std::string& path,
    const std::function<bool(google::protobuf::io::ZeroCopyOutputStream*)>& serialize);
void WriteProfile(const std::string& path, const FinishedProfile& profile);

}  // namespace goheap2pprof
