#include "base/bytes.h"

namespace goheap2pprof {

void ByteView::Require(uint64_t off, uint64_t len) const {
  if (!Has(off, len)) throw OutOfRange(off, len);
}

Error ByteView::OutOfRange(uint64_t off, uint64_t len) const {
  return Error(ErrorKind::kMalformed, what_, ": read of ", len, " bytes at offset ", Hex(off),
               " is outside its ", data_.size(), " bytes");
}

ByteView ByteView::Sub(uint64_t off, uint64_t len, std::string_view what) const {
  Require(off, len);
  return ByteView(data_.subspan(off, len), what);
}

Expected<ByteView> ByteView::TrySub(uint64_t off, uint64_t len, std::string_view what) const {
  if (!Has(off, len)) return OutOfRange(off, len);
  return ByteView(data_.subspan(off, len), what);
}

std::string_view ByteView::CString(uint64_t off, size_t max_len) const {
  return TryCString(off, max_len).value();
}

Expected<std::string_view> ByteView::TryCString(uint64_t off, size_t max_len) const {
  if (!Has(off, 0)) return OutOfRange(off, 0);
  const uint8_t* start = data_.data() + off;
  size_t avail = std::min<uint64_t>(data_.size() - off, max_len);
  const void* nul = std::memchr(start, 0, avail);
  if (nul == nullptr) {
    return Error(ErrorKind::kMalformed, what_, ": string at offset ", Hex(off),
                 " is not NUL-terminated within ", avail, " bytes");
  }
  return std::string_view(reinterpret_cast<const char*>(start),
                          static_cast<const uint8_t*>(nul) - start);
}

uint64_t ByteView::Uvarint(uint64_t* off) const { return TryUvarint(off).value(); }

Expected<uint64_t> ByteView::TryUvarint(uint64_t* off) const {
  uint64_t value = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (!Has(*off, 1)) return OutOfRange(*off, 1);
    uint8_t b = data_[*off];
    ++*off;
    value |= static_cast<uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) return value;
  }
  return Error(ErrorKind::kMalformed, what_, ": varint at offset ", Hex(*off), " is too long");
}

}  // namespace goheap2pprof
