#include "base/bytes.h"

namespace goheap2pprof {

void ByteView::Require(uint64_t off, uint64_t len) const {
  if (!Has(off, len)) {
    throw Error(ErrorKind::kMalformed, what_, ": read of ", len, " bytes at offset ", Hex(off),
                " is outside its ", data_.size(), " bytes");
  }
}

ByteView ByteView::Sub(uint64_t off, uint64_t len, std::string_view what) const {
  Require(off, len);
  return ByteView(data_.subspan(off, len), what);
}

std::string_view ByteView::CString(uint64_t off, size_t max_len) const {
  Require(off, 0);
  const uint8_t* start = data_.data() + off;
  size_t avail = std::min<uint64_t>(data_.size() - off, max_len);
  const void* nul = std::memchr(start, 0, avail);
  if (nul == nullptr) {
    throw Error(ErrorKind::kMalformed, what_, ": string at offset ", Hex(off),
                " is not NUL-terminated within ", avail, " bytes");
  }
  return std::string_view(reinterpret_cast<const char*>(start),
                          static_cast<const uint8_t*>(nul) - start);
}

uint64_t ByteView::Uvarint(uint64_t* off) const {
  uint64_t value = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    uint8_t b = U8(*off);
    ++*off;
    value |= static_cast<uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) return value;
  }
  throw Error(ErrorKind::kMalformed, what_, ": varint at offset ", Hex(*off), " is too long");
}

}  // namespace goheap2pprof
