// The little-endian fields that the private messages between a confined
// worker and the privileged agent are made of (runtime_stats_wire.h,
// push_wire.h): a writer, and a reader whose every read is checked,
// because whichever side reads may be reading a compromised peer's bytes.
// A length or count over its bound, a read past the end or bytes left over
// throw Error(kMalformed) naming the message.
//
//   WireWriter w;  w.U32(kMagic);  w.Str(name);  std::string bytes = w.Take();
//   WireReader r(bytes, "memory-statistics reply");
//   r.U32();  std::string name = r.Str(256, "metric name");  r.End();
#pragma once

#include <bit>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "base/bytes.h"
#include "base/error.h"
#include "base/expected.h"

namespace goheap2pprof {

class WireWriter {
 public:
  void U8(uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void U32(uint32_t v) { Raw(&v, 4); }
  void U64(uint64_t v) { Raw(&v, 8); }
  void F64(double v) { U64(std::bit_cast<uint64_t>(v)); }
  void Str(std::string_view s) {
    U32(static_cast<uint32_t>(s.size()));
    out_.append(s);
  }
  std::string Take() { return std::move(out_); }

 private:
  // The wire is little-endian, as both ends are (one build, one machine).
  void Raw(const void* p, size_t n) { out_.append(static_cast<const char*>(p), n); }
  std::string out_;
};

// A cursor over a message whose every read is checked (ByteView throws
// kMalformed past the end). `what` names the message in errors; it must
// outlive the reader.
class WireReader {
 public:
  WireReader(std::string_view bytes, std::string_view what)
      : view_(Bytes(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()), what),
        what_(what) {}
  uint8_t U8() { return view_.U8(Advance(1)); }
  // Strict, so that an accepted message encodes back to the same bytes.
  bool Bool(std::string_view field) {
    const uint8_t v = U8();
    if (v > 1) throw Error(ErrorKind::kMalformed, what_, ": ", field, " is ", v);
    return v == 1;
  }
  uint32_t U32() { return view_.U32(Advance(4)); }
  uint64_t U64() { return view_.U64(Advance(8)); }
  double F64() { return std::bit_cast<double>(U64()); }
  std::string Str(size_t max, std::string_view field) {
    const uint32_t n = U32();
    if (n > max) {
      throw Error(ErrorKind::kMalformed, what_, ": ", field, " of ", n, " bytes exceeds ", max);
    }
    const uint64_t at = Advance(n);
    return std::string(reinterpret_cast<const char*>(view_.data().data()) + at, n);
  }
  uint32_t Count(size_t max, std::string_view field) {
    const uint32_t n = U32();
    if (n > max) {
      throw Error(ErrorKind::kMalformed, what_, ": ", n, " ", field, " exceeds the bound of ", max);
    }
    return n;
  }
  size_t Left() const { return view_.size() - at_; }
  void End() const {
    if (at_ != view_.size()) {
      throw Error(ErrorKind::kMalformed, what_, ": ", view_.size() - at_, " bytes after its end");
    }
  }

 private:
  uint64_t Advance(uint64_t n) {
    const uint64_t at = at_;
    view_.Require(at, n);
    at_ += n;
    return at;
  }
  ByteView view_;
  std::string_view what_;
  uint64_t at_ = 0;
};

// decode() of a peer's message, with the Error it throws returned: for the
// roles, to whom a worker's bad reply fails one answer or one process's
// push, not the role. Other exceptions pass.
template <typename Decode>
auto TryDecodeReply(Decode&& decode) -> Expected<decltype(decode())> {
  try {
    return std::forward<Decode>(decode)();
  } catch (const Error& e) {
    // Boundary: one worker's reply, untrusted bytes; the caller says what
    // failed.
    return e;
  }
}

}  // namespace goheap2pprof
