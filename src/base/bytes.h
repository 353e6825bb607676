// Bounds-checked reading of untrusted bytes. Every parser of target memory or
// file contents goes through ByteView, so an out-of-range offset becomes an
// Error(kMalformed) naming what was being read, never an out-of-bounds access.
//
//   ByteView v(span, "pclntab");
//   uint32_t magic = v.U32(0);
//   std::string_view name = v.CString(name_off);
//
// The Try variants give the same Error as a value, for probes to which a bad
// table is an expected outcome (a failed symbol lookup), not the end of the
// run:
//
//   Expected<uint32_t> off = v.TryU32(index * 4);
//   if (!off) return off.error();
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string_view>

#include "base/error.h"
#include "base/expected.h"

namespace goheap2pprof {

using Bytes = std::span<const uint8_t>;

// a + b, or nullopt on overflow.
inline std::optional<uint64_t> CheckedAdd(uint64_t a, uint64_t b) {
  uint64_t r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}
inline std::optional<uint64_t> CheckedMul(uint64_t a, uint64_t b) {
  uint64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// Little-endian loads from a buffer the caller has already bounds-checked.
inline uint64_t LoadU64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
inline uint32_t LoadU32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

class ByteView {
 public:
  ByteView() = default;
  ByteView(Bytes data, std::string_view what) : data_(data), what_(what) {}

  size_t size() const { return data_.size(); }
  Bytes data() const { return data_; }
  std::string_view what() const { return what_; }

  bool Has(uint64_t off, uint64_t len) const {
    return off <= data_.size() && len <= data_.size() - off;
  }
  // Throws kMalformed unless [off, off+len) is inside the view.
  void Require(uint64_t off, uint64_t len) const;
  // The Error Require throws, as a value.
  Error OutOfRange(uint64_t off, uint64_t len) const;

  uint8_t U8(uint64_t off) const {
    Require(off, 1);
    return data_[off];
  }
  uint16_t U16(uint64_t off) const {
    Require(off, 2);
    uint16_t v;
    std::memcpy(&v, &data_[off], 2);
    return v;
  }
  uint32_t U32(uint64_t off) const {
    Require(off, 4);
    return LoadU32(&data_[off]);
  }
  int32_t I32(uint64_t off) const { return static_cast<int32_t>(U32(off)); }
  uint64_t U64(uint64_t off) const {
    Require(off, 8);
    return LoadU64(&data_[off]);
  }

  // A sub-view; throws if out of range.
  ByteView Sub(uint64_t off, uint64_t len, std::string_view what) const;
  ByteView Sub(uint64_t off, uint64_t len) const { return Sub(off, len, what_); }
  // NUL-terminated string starting at off, at most max_len bytes long.
  std::string_view CString(uint64_t off, size_t max_len = 64 * 1024) const;
  // Unsigned LEB128 varint at *off, advancing *off. Throws on overrun.
  uint64_t Uvarint(uint64_t* off) const;

  Expected<uint8_t> TryU8(uint64_t off) const {
    if (!Has(off, 1)) return OutOfRange(off, 1);
    return data_[off];
  }
  Expected<uint32_t> TryU32(uint64_t off) const {
    if (!Has(off, 4)) return OutOfRange(off, 4);
    return LoadU32(&data_[off]);
  }
  Expected<ByteView> TrySub(uint64_t off, uint64_t len, std::string_view what) const;
  Expected<std::string_view> TryCString(uint64_t off, size_t max_len = 64 * 1024) const;
  Expected<uint64_t> TryUvarint(uint64_t* off) const;

 private:
  Bytes data_;
  std::string_view what_ = "data";
};

}  // namespace goheap2pprof
