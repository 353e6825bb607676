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
  t[6] = 1;          // minLC
  t[7] = 8;          // ptrSize
  PutU64(t, 8, 2);   // nfunc
  PutU64(t, 16, 1);  // nfiles
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

// A function for BuildGo120Table. Functions are laid out back to back from
// text offset 0 in the order given. Lines are {line, length} runs over the
// function's bytes; an inlined call paints its own line over its range.
struct HandInline {
  std::string name;
  uint32_t begin = 0, end = 0;  // PC range inside the function
  uint32_t parent_pc = 0;       // offset of the call's PC in the caller
  int32_t line = 0;             // line inside the inlined function
  int32_t start_line = 0;
  uint8_t func_id = 0;
};
struct HandFunc {
  std::string name;
  uint32_t size = 0x100;
  std::string file = "a.go";  // "" gives an unknown file
  int32_t start_line = 0;
  std::vector<std::pair<int32_t, uint32_t>> lines = {};  // empty: one line 1 run
  uint8_t func_id = 0;
  // Nested calls come after their callers: the innermost call at a PC wins.
  std::vector<HandInline> inlines = {};
  // The SP delta over the whole function (_func.pcsp), none when negative;
  // and _func.flag (1 TopFrame, 2 SPWrite): for the goroutine unwinder.
  int32_t frame_size = -1;
  uint8_t flag = 0;
  // Bytes at the entry whose SP delta is 0 (an arm64 prologue that has not
  // opened the frame yet); frame_size over the rest.
  uint32_t prologue = 0;
};

// A Go 1.20+ pclntab (and its go:func.* bytes, holding the inline trees) of
// the given functions, with text offsets starting at 0.
inline HandTable BuildGo120Table(const std::vector<HandFunc>& funcs) {
  constexpr uint64_t kFuncHdr = 44;
  const std::string kUnknownFile(1, '\0');
  std::vector<uint8_t> t(72, 0);
  PutU32(t, 0, 0xfffffff1);
  t[6] = 1;  // minLC
  t[7] = 8;  // ptrSize
  PutU64(t, 8, funcs.size());

  // funcnametab: every function and inlined name.
  std::string names;
  auto name_off = [&](const std::string& name) {
    size_t at = names.find(name + std::string(1, '\0'));
    if (at != std::string::npos && (at == 0 || names[at - 1] == '\0')) {
      return static_cast<int32_t>(at);
    }
    int32_t off = static_cast<int32_t>(names.size());
    names += name;
    names.push_back('\0');
    return off;
  };
  // Files: cutab entry i -> offset in filetab (0xffffffff: unknown).
  std::vector<std::string> files;
  auto file_no = [&](const std::string& file) {
    for (size_t i = 0; i < files.size(); ++i) {
      if (files[i] == file) return static_cast<int32_t>(i);
    }
    files.push_back(file);
    return static_cast<int32_t>(files.size() - 1);
  };
  std::vector<uint8_t> pctab{0};  // offset 0 means "no table"
  auto add_table = [&](const std::vector<uint8_t>& tab) {
    uint32_t off = static_cast<uint32_t>(pctab.size());
    pctab.insert(pctab.end(), tab.begin(), tab.end());
    return off;
  };
  // Run-length encodes a per-byte value array.
  auto runs_of = [](const std::vector<int32_t>& v) {
    std::vector<std::pair<int32_t, uint32_t>> runs;
    for (int32_t x : v) {
      if (!runs.empty() && runs.back().first == x) {
        ++runs.back().second;
      } else {
        runs.push_back({x, 1});
      }
    }
    return runs;
  };

  struct Laid {
    uint32_t entry, pcln, pcfile, inl, tree_off, pcsp;
    int32_t name;
  };
  std::vector<Laid> laid;
  std::vector<uint8_t> gofunc(8, 0xee);  // something before the first tree
  uint32_t entry = 0;
  for (const HandFunc& f : funcs) {
    Laid l{};
    l.entry = entry;
    l.name = name_off(f.name);
    std::vector<int32_t> line(f.size, 1), inl(f.size, -1);
    if (!f.lines.empty()) {
      uint32_t at = 0;
      for (auto [value, len] : f.lines) {
        for (uint32_t i = 0; i < len && at < f.size; ++i) line[at++] = value;
      }
    }
    for (size_t k = 0; k < f.inlines.size(); ++k) {
      const HandInline& c = f.inlines[k];
      for (uint32_t pc = c.begin; pc < c.end && pc < f.size; ++pc) {
        line[pc] = c.line;
        inl[pc] = static_cast<int32_t>(k);
      }
    }
    l.pcln = add_table(PcTable(runs_of(line)));
    // The unknown file is a file number whose cutab entry is 0xffffffff.
    l.pcfile = add_table(PcTable({{file_no(f.file.empty() ? kUnknownFile : f.file), f.size}}));
    l.inl = f.inlines.empty() ? 0 : add_table(PcTable(runs_of(inl)));
    l.pcsp = f.frame_size < 0 ? 0
             : f.prologue == 0
                 ? add_table(PcTable({{f.frame_size, f.size}}))
                 : add_table(PcTable({{0, f.prologue}, {f.frame_size, f.size - f.prologue}}));
    l.tree_off = 0xffffffff;
    if (!f.inlines.empty()) {
      l.tree_off = static_cast<uint32_t>(gofunc.size());
      for (const HandInline& c : f.inlines) {
        size_t at = gofunc.size();
        gofunc.resize(at + 16, 0);
        gofunc[at] = c.func_id;
        PutU32(gofunc, at + 4, static_cast<uint32_t>(name_off(c.name)));
        PutU32(gofunc, at + 8, c.parent_pc);
        PutU32(gofunc, at + 12, static_cast<uint32_t>(c.start_line));
      }
    }
    laid.push_back(l);
    entry += f.size;
  }

  uint64_t funcname_off = t.size();
  t.insert(t.end(), names.begin(), names.end());
  uint64_t cu_off = t.size();
  std::string filetab;
  for (size_t i = 0; i < files.size(); ++i) {
    if (files[i] == kUnknownFile) {
      PutU32(t, cu_off + 4 * i, 0xffffffff);
    } else {
      PutU32(t, cu_off + 4 * i, static_cast<uint32_t>(filetab.size()));
      filetab += files[i];
      filetab.push_back('\0');
    }
  }
  PutU64(t, 16, files.size());
  uint64_t filetab_off = t.size();
  t.insert(t.end(), filetab.begin(), filetab.end());
  uint64_t pctab_off = t.size();
  t.insert(t.end(), pctab.begin(), pctab.end());

  // functab (nfunc + 1 entries), then the _func records.
  uint64_t pcln_off = t.size();
  std::vector<uint8_t> ft((funcs.size() + 1) * 8, 0);
  for (size_t i = 0; i < funcs.size(); ++i) {
    const HandFunc& f = funcs[i];
    const Laid& l = laid[i];
    uint64_t at = ft.size();
    PutU32(ft, i * 8, l.entry);
    PutU32(ft, i * 8 + 4, static_cast<uint32_t>(at));
    ft.resize(at + kFuncHdr + 3 * 4 + 4 * 4, 0);
    PutU32(ft, at + 0, l.entry);
    PutU32(ft, at + 4, static_cast<uint32_t>(l.name));
    PutU32(ft, at + 16, l.pcsp);
    PutU32(ft, at + 20, l.pcfile);
    PutU32(ft, at + 24, l.pcln);
    PutU32(ft, at + 28, 3);  // npcdata
    PutU32(ft, at + 32, 0);  // cuOffset
    PutU32(ft, at + 36, static_cast<uint32_t>(f.start_line));
    ft[at + 40] = f.func_id;
    ft[at + 41] = f.flag;
    ft[at + 43] = 4;                       // nfuncdata
    PutU32(ft, at + kFuncHdr + 8, l.inl);  // PCDATA_InlTreeIndex
    for (int k = 0; k < 4; ++k) PutU32(ft, at + kFuncHdr + 12 + 4 * k, 0xffffffff);
    PutU32(ft, at + kFuncHdr + 12 + 12, l.tree_off);  // FUNCDATA_InlTree
  }
  PutU32(ft, funcs.size() * 8, entry);  // end of text
  t.insert(t.end(), ft.begin(), ft.end());

  PutU64(t, 32, funcname_off);
  PutU64(t, 40, cu_off);
  PutU64(t, 48, filetab_off);
  PutU64(t, 56, pctab_off);
  PutU64(t, 64, pcln_off);
  return {t, gofunc};
}

}  // namespace testing_pclntab
}  // namespace goheap2pprof
