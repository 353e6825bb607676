// A bounds-checked reader of protobuf wire format, for the compact profile
// decoder (pprof/profile/decode.h) that reads serialized pprof profiles
// without building pb::Profile messages: a 100k-sample profile
// parsed as messages costs a memory allocation per sample, location and
// line. Every read is checked against the end of its message, and a
// truncated or malformed field throws Error(kMalformed).
//
//   ProtoWire w(bytes);
//   while (!w.Done()) {
//     auto [field, type] = w.Tag();
//     if (field == 9 && type == 0) time = static_cast<int64_t>(w.Varint()); else w.Skip(type);
//   }
#pragma once

#include <cstdint>
#include <string_view>
#include <utility>

#include "base/error.h"

namespace goheap2pprof {

// A bounds-checked reader of protobuf wire format.
class ProtoWire {
 public:
  explicit ProtoWire(std::string_view bytes)
      : p_(reinterpret_cast<const uint8_t*>(bytes.data())), end_(p_ + bytes.size()) {}

  bool Done() const { return p_ == end_; }

  uint64_t Varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p_ == end_) throw Malformed("truncated varint");
      const uint8_t b = *p_++;
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return v;
    }
    throw Malformed("varint longer than 10 bytes");
  }

  // A varint's own bytes: a packed repeated field of one element.
  std::string_view VarintBytes() {
    const uint8_t* start = p_;
    Varint();
    return {reinterpret_cast<const char*>(start), static_cast<size_t>(p_ - start)};
  }

  // The next field's number and wire type.
  std::pair<uint64_t, int> Tag() {
    const uint64_t tag = Varint();
    if ((tag >> 3) == 0) throw Malformed("field number 0");
    last_field_ = tag >> 3;
    return {tag >> 3, static_cast<int>(tag & 7)};
  }

  std::string_view Bytes() {
    const uint64_t n = Varint();
    if (n > static_cast<uint64_t>(end_ - p_)) throw Malformed("field longer than its message");
    std::string_view out(reinterpret_cast<const char*>(p_), n);
    p_ += n;
    return out;
  }

  // Skips a field of an unknown number. depth: of the group it is in.
  void Skip(int wire_type, int depth = 0) {
    size_t n = 0;
    switch (wire_type) {
      case 0:
        Varint();
        return;
      case 2:
        Bytes();
        return;
      case 1:
        n = 8;
        break;
      case 5:
        n = 4;
        break;
      case 3:
        SkipGroup(depth);
        return;
      default:
        throw Malformed("unsupported wire type");
    }
    if (n > static_cast<size_t>(end_ - p_)) throw Malformed("truncated fixed-size field");
    p_ += n;
  }

  // A repeated varint field, packed or not: calls add on each element.
  template <typename F>
  void Repeated(int wire_type, F add) {
    if (wire_type == 0) {
      add(Varint());
    } else if (wire_type == 2) {
      ProtoWire packed(Bytes());
      while (!packed.Done()) add(packed.Varint());
    } else {
      throw Malformed("a repeated number field is neither varint nor packed");
    }
  }

 private:
  // A group (deprecated, but protobuf parsers accept one as an unknown
  // field): its fields up to its end tag, nested at most as deep as
  // libprotobuf allows.
  void SkipGroup(int depth) {
    if (depth >= 100) throw Malformed("groups nested too deep");
    const uint64_t start = last_field_;
    for (;;) {
      const auto [field, type] = Tag();
      if (type == 4) {
        if (field != start) throw Malformed("a group ends with another field's number");
        return;
      }
      Skip(type, depth + 1);
    }
  }

  static Error Malformed(std::string_view what) {
    return Error(ErrorKind::kMalformed, "profile: ", what);
  }

  const uint8_t* p_;
  const uint8_t* end_;
  uint64_t last_field_ = 0;  // of the last Tag(): the number of a group it starts
};

}  // namespace goheap2pprof
