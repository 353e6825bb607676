// Hand-built pclntab images in both layouts (Go 1.18-1.19 and 1.20+), shared
// by the pclntab unit tests and the fuzz seed generator.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace goheap2pprof {
namespace testing_pclntab {

inline void PutU32(std::vector<uint8_t>& b, uint64_t off, uint32_t v) {
  if (b.size() < off + 4) b.resize(off + 4);
  std::memcpy(&b[off], &v, 4);
}
inline void PutU64(std::vector<uint8_t>& b, uint64_t off, uint64_t v) {
  if (b.size() < off + 8) b.resize(off + 8);
  std::memcpy(&b[off], &v, 8);
}
inline void AppendUvarint(std::vector<uint8_t>& b, uint64_t v) {
  while (v >= 0x80) {
    b.push_back(static_cast<uint8_t>(v) | 0x80);
    v >>= 7;
  }
  b.push_back(static_cast<uint8_t>(v));
}

// A pcvalue table: {value, length in bytes} runs, as cmd/link encodes them.
inline std::vector<uint8_t> PcTable(const std::vector<std::pair<int32_t, uint32_t>>& runs,
                             uint8_t min_lc = 1) {
  std::vector<uint8_t> out;
  int32_t prev = -1;
  for (auto [value, len] : runs) {
    int32_t delta = value - prev;
    AppendUvarint(out, static_cast<uint32_t>((delta << 1) ^ (delta >> 31)));
    AppendUvarint(out, len / min_lc);
    prev = value;
  }
  out.push_back(0);
  return out;
}

struct HandTable {
  std::vector<uint8_t> table;
  std::vector<uint8_t> gofunc;
};

constexpr uint64_t kText = 0x1000;

// Two functions: main.f at text+0 (0x100 bytes) with main.inl inlined at
// [0x20, 0x30), main.g at text+0x100 (0x100 bytes) with an unknown file.
inline HandTable BuildHandTable(bool go120) {
  const uint64_t func_hdr = go120 ? 44 : 40;
  std::vector<uint8_t> t(72, 0);
  PutU32(t, 0, go120 ? 0xfffffff1 : 0xfffffff0);
  t[6] = 1;  // minLC
  t[7] = 8;  // ptrSize
  PutU64(t, 8, 2);     // nfunc
  PutU64(t, 16, 1);    // nfiles
  PutU64(t, 24, kText);

  // funcnametab
  uint64_t funcname_off = t.size();
  std::string names("main.f\0main.g\0main.inl\0", 23);
  t.insert(t.end(), names.begin(), names.end());
  const int32_t name_f = 0, name_g = 7, name_inl = 14;
  // cutab: fileno 0 -> "a.go", fileno 1 -> unknown
  uint64_t cu_off = t.size();
  PutU32(t, cu_off, 0);
  PutU32(t, cu_off + 4, 0xffffffff);
  // filetab
  uint64_t filetab_off = t.size();
  std::string files("a.go\0", 5);
  t.insert(t.end(), files.begin(), files.end());
  // pctab; offset 0 inside it means "no table", so start with a pad byte.
  uint64_t pctab_off = t.size();
  std::vector<uint8_t> pctab{0};
  auto add_table = [&](const std::vector<uint8_t>& tab) {
    uint32_t off = static_cast<uint32_t>(pctab.size());
    pctab.insert(pctab.end(), tab.begin(), tab.end());
    return off;
  };
  // Lines use a 2-byte varint for the 0xf0 run.
  uint32_t f_pcln = add_table(PcTable({{10, 0x10}, {12, 0xf0}}));
  uint32_t f_pcfile = add_table(PcTable({{0, 0x100}}));
  uint32_t f_inl = add_table(PcTable({{-1, 0x20}, {0, 0x10}, {-1, 0xd0}}));
  uint32_t g_pcln = add_table(PcTable({{5, 0x100}}));
  uint32_t g_pcfile = add_table(PcTable({{1, 0x100}}));
  t.insert(t.end(), pctab.begin(), pctab.end());

  // functab + _func records
  uint64_t pcln_off = t.size();
  std::vector<uint8_t> ft(3 * 8, 0);
  uint64_t f_func = ft.size();
  uint64_t f_size = func_hdr + 3 * 4 + 4 * 4;  // npcdata 3, nfuncdata 4
  uint64_t g_func = f_func + f_size;
  PutU32(ft, 0, 0x000);
  PutU32(ft, 4, static_cast<uint32_t>(f_func));
  PutU32(ft, 8, 0x100);
  PutU32(ft, 12, static_cast<uint32_t>(g_func));
  PutU32(ft, 16, 0x200);  // end of text
  PutU32(ft, 20, 0);
  auto put_func = [&](uint64_t at, uint32_t entry, int32_t name, uint32_t pcfile, uint32_t pcln,
                      uint32_t npcdata, int32_t start_line, uint8_t nfuncdata) {
    PutU32(ft, at + 0, entry);
    PutU32(ft, at + 4, static_cast<uint32_t>(name));
    PutU32(ft, at + 20, pcfile);
    PutU32(ft, at + 24, pcln);
    PutU32(ft, at + 28, npcdata);
    PutU32(ft, at + 32, 0);  // cuOffset
    if (go120) {
      PutU32(ft, at + 36, static_cast<uint32_t>(start_line));
      ft.resize(std::max<size_t>(ft.size(), at + 44));
      ft[at + 40] = 0;  // funcID normal
      ft[at + 43] = nfuncdata;
    } else {
      ft.resize(std::max<size_t>(ft.size(), at + 40));
      ft[at + 36] = 0;
      ft[at + 39] = nfuncdata;
    }
  };
  put_func(f_func, 0x000, name_f, f_pcfile, f_pcln, 3, 7, 4);
  PutU32(ft, f_func + func_hdr + 0, 0);
  PutU32(ft, f_func + func_hdr + 4, 0);
  PutU32(ft, f_func + func_hdr + 8, f_inl);  // PCDATA_InlTreeIndex
  PutU32(ft, f_func + func_hdr + 12, 0xffffffff);
  PutU32(ft, f_func + func_hdr + 16, 0xffffffff);
  PutU32(ft, f_func + func_hdr + 20, 0xffffffff);
  PutU32(ft, f_func + func_hdr + 24, 8);  // FUNCDATA_InlTree at gofunc+8
  put_func(g_func, 0x100, name_g, g_pcfile, g_pcln, 0, 50, 0);
  t.insert(t.end(), ft.begin(), ft.end());

  PutU64(t, 32, funcname_off);
  PutU64(t, 40, cu_off);
  PutU64(t, 48, filetab_off);
  PutU64(t, 56, pctab_off);
  PutU64(t, 64, pcln_off);

  std::vector<uint8_t> gofunc(8, 0xee);  // something else before the tree
  if (go120) {
    gofunc.resize(8 + 16, 0);
    gofunc[8] = 0;  // funcID
    PutU32(gofunc, 12, name_inl);
    PutU32(gofunc, 16, 0x18);  // parentPc
    PutU32(gofunc, 20, 30);    // startLine
  } else {
    gofunc.resize(8 + 20, 0);
    gofunc[8 + 0] = 0xff;  // parent = -1
    gofunc[8 + 1] = 0xff;
    gofunc[8 + 2] = 0;  // funcID
    PutU32(gofunc, 8 + 12, name_inl);
    PutU32(gofunc, 8 + 16, 0x18);
  }
  return {t, gofunc};
}

}  // namespace testing_pclntab
}  // namespace goheap2pprof
