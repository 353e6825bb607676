// Writes the seed corpora of the fuzz targets into <dir>/<target>/:
//   fuzz_make_seeds testdata/fuzz [go-binary seed-name]
// (scripts/make-fuzz-seeds.sh runs it and adds ELF seeds built with gcc).
// Seeds are small, valid inputs that reach deep into each parser. A Go
// binary given on the command line is compacted into an ELF seed: its
// segments are kept except the code, of which only the runtime functions
// the Go layer reads remain.
#include <elf.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "../unit/hand_pclntab.h"
#include "../unit/synthetic_core.h"
#include "base/error.h"
#include "elf/elf_file.h"
#include "gobin/buildinfo.h"
#include "gobin/go_binary.h"
#include "gobin/pclntab.h"
#include "gobin/runtime_variables.h"
#include "runtime/runtime_traits.h"

namespace {

namespace fs = std::filesystem;
using Buf = std::vector<uint8_t>;

void Write(const fs::path& dir, const std::string& name, const Buf& bytes) {
  fs::create_directories(dir);
  std::ofstream out(dir / name, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}
void WriteText(const fs::path& dir, const std::string& name, const std::string& text) {
  Write(dir, name, Buf(text.begin(), text.end()));
}
void Append64(Buf& b, uint64_t v) {
  uint8_t raw[8];
  std::memcpy(raw, &v, 8);
  b.insert(b.end(), raw, raw + 8);
}
void Append32(Buf& b, uint32_t v) {
  uint8_t raw[4];
  std::memcpy(raw, &v, 4);
  b.insert(b.end(), raw, raw + 4);
}

void PclntabSeeds(const fs::path& dir) {
  using goheap2pprof::testing_pclntab::BuildHandTable;
  for (bool go120 : {false, true}) {
    auto hand = BuildHandTable(go120);
    Buf b;
    Append32(b, static_cast<uint32_t>(hand.gofunc.size()));
    b.insert(b.end(), hand.table.begin(), hand.table.end());
    b.insert(b.end(), hand.gofunc.begin(), hand.gofunc.end());
    Write(dir, go120 ? "hand-go120" : "hand-go118", b);
  }
}

void BuildInfoSeeds(const fs::path& dir) {
  auto blob = [](const std::string& version, const std::string& mod) {
    Buf b = {0xff};
    std::string magic = " Go buildinf:";
    b.insert(b.end(), magic.begin(), magic.end());
    b.push_back(8);  // ptrSize
    b.push_back(2);  // flags: inline strings
    b.resize(32, 0);
    b.push_back(static_cast<uint8_t>(version.size()));
    b.insert(b.end(), version.begin(), version.end());
    // uvarint length of modinfo (may exceed one byte)
    uint64_t n = mod.size();
    while (n >= 0x80) {
      b.push_back(static_cast<uint8_t>(n) | 0x80);
      n >>= 7;
    }
    b.push_back(static_cast<uint8_t>(n));
    b.insert(b.end(), mod.begin(), mod.end());
    b.resize((b.size() + 15) / 16 * 16, 0);
    return b;
  };
  const std::string start("\x30\x77\xaf\x0c\x92\x74\x08\x02\x41\xe1\xc1\x07\xe6\xd6\x18\xe6", 16);
  const std::string end("\xf9\x32\x43\x31\x86\x18\x20\x72\x00\x82\x42\x10\x41\x16\xd8\xf2", 16);
  Write(dir, "go1.26.8",
        blob("go1.26.8", start + "path\texample.com/x\nmod\texample.com/x\t(devel)\t\n" + end));
  Write(dir, "go1.19.8-empty-mod", blob("go1.19.8", ""));
  Buf padded(48, 0);
  Buf b = blob("go1.22.0 X:boringcrypto", "");
  padded.insert(padded.end(), b.begin(), b.end());
  Write(dir, "aligned-in-data", padded);
  WriteText(dir, "devel-version", "devel go1.23-abcdef Tue Jan 1");
}

void ProcfsSeeds(const fs::path& dir) {
  WriteText(dir, "stat",
            "4242 (my (weird) prog) S 1 4242 4242 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 8 0 987654 "
            "1000000 200 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n");
  WriteText(dir, "maps",
            "00400000-00452000 r-xp 00000000 fd:01 1234567                    /usr/bin/prog\n"
            "7f00aa000000-7f00aa021000 rw-p 00000000 00:00 0 \n"
            "7f00ab000000-7f00ab001000 r-xp 00003000 08:02 42   /tmp/lib.so (deleted)\n"
            "7ffd1a3f2000-7ffd1a3f4000 r-xp 00000000 00:00 0                  [vdso]\n"
            "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0          [vsyscall]\n");
  WriteText(dir, "pid", "31337");
}

// A bucket list laid out from offset 0 of the fuzz image (mapped at kBase).
void HeapSeeds(const fs::path& dir) {
  constexpr uint64_t kBase = 0x100000;
  struct B {
    uint64_t size;
    std::vector<uint64_t> stack;
    std::vector<uint64_t> record;  // active + future[3]
  };
  auto image = [&](const std::vector<B>& buckets, bool counts_only) {
    Buf mem;
    std::vector<uint64_t> addrs;
    for (const B& b : buckets) {
      addrs.push_back(kBase + mem.size());
      mem.resize(mem.size() + 8 * (6 + b.stack.size()) + (counts_only ? 64 : 128), 0);
    }
    for (size_t i = 0; i < buckets.size(); ++i) {
      uint64_t off = addrs[i] - kBase;
      uint64_t next = i + 1 < buckets.size() ? addrs[i + 1] : 0;
      std::vector<uint64_t> words = {
          0, next, 1, 0x9e3779b9, buckets[i].size, buckets[i].stack.size()};
      words.insert(words.end(), buckets[i].stack.begin(), buckets[i].stack.end());
      words.insert(words.end(), buckets[i].record.begin(), buckets[i].record.end());
      std::memcpy(&mem[off], words.data(), std::min(words.size() * 8, mem.size() - off));
    }
    return mem;
  };
  auto seed = [&](const std::string& name, uint8_t version, uint32_t cycle, uint64_t rate,
                  const Buf& mem) {
    Buf b;
    Append64(b, mem.empty() ? 0 : 1);  // head: the first bucket, at offset 0
    Append32(b, cycle);
    b.push_back(version);
    Append64(b, rate);
    b.insert(b.end(), mem.begin(), mem.end());
    Write(dir, name, b);
  };
  // Stacks point into the hand-built pclntab's functions (text 0x1000-0x1200),
  // including the inlined range [0x1020, 0x1030) of main.f.
  std::vector<B> go126 = {
      {16, {0x1025, 0x1105}, {4, 1, 64, 16, 1, 0, 16, 0, 2, 0, 32, 0, 0, 0, 0, 0}},
      {4096, {0x1031, 0x1101, 0x1011}, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
      {8, {0x10ff}, {9, 9, 72, 72, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
  };
  seed("go126-rate1", 3, 7 << 1, 1, image(go126, false));
  seed("go126-default-rate", 3, (4 << 1) | 1, 512 * 1024, image(go126, false));
  seed("go118-unpublished", 0, 2, 512 * 1024,
       image({{32, {0x1021}, {0, 0, 0, 0, 1, 0, 32, 0, 2, 0, 64, 0, 3, 1, 96, 32}}}, false));
  seed("go127-counts-only", 4, 3 << 1, 1,
       image({{48, {0x1027, 0x1100}, {5, 2, 1, 0, 0, 0, 0, 0}},
              {24, {0x1010}, {1, 0, 0, 0, 0, 0, 0, 0}}},
             true));
  seed("empty", 2, 0, 512 * 1024, {});
  // Corrupt counters at the ends of the int64 range: a sample of INT64_MIN
  // objects and byte sums that overflow when the views add them up (two
  // buckets with the same stack merge in the JSON view).
  constexpr uint64_t kMin = 0x8000000000000000ull, kMax = 0x7fffffffffffffffull;
  std::vector<B> extreme = {
      {16, {0x1025, 0x1105}, {kMin, 0, kMax, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
      {16, {0x1025, 0x1105}, {1, 0, kMax, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
      {8, {0x10ff}, {kMax, 0, kMin, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
  };
  // Selector 3: Go 1.26, inuse_space; 3 + 5: inuse_objects; 3 + 20: every row.
  seed("extreme-counters-rate1", 3, 7 << 1, 1, image(extreme, false));
  seed("extreme-counters-objects-all-rows", 3 + 5 + 20, 7 << 1, 1, image(extreme, false));
  seed("extreme-counters-scaled", 3 + 10, 7 << 1, 512 * 1024, image(extreme, false));
}

// BlockCacheReader inputs (layout in tests/fuzz/fuzz_block_cache.cc).
void BlockCacheSeeds(const fs::path& dir) {
  struct Span {
    uint16_t offset, length;
  };
  struct Read {
    bool view;
    uint16_t offset, length;
  };
  auto seed = [&](const std::string& name, uint8_t block_shift, uint8_t blocks, bool top,
                  const std::vector<Span>& ranges, const std::vector<Span>& chunks,
                  const std::vector<Read>& reads) {
    Buf b = {block_shift, blocks, static_cast<uint8_t>(top ? 1 : 0)};
    auto spans = [&](const std::vector<Span>& list) {
      b.push_back(static_cast<uint8_t>(list.size()));
      for (const Span& s : list) {
        for (uint16_t v : {s.offset, s.length}) {
          b.push_back(static_cast<uint8_t>(v));
          b.push_back(static_cast<uint8_t>(v >> 8));
        }
      }
    };
    spans(ranges);
    spans(chunks);
    for (const Read& r : reads) {
      b.push_back(r.view ? 1 : 0);
      for (uint16_t v : {r.offset, r.length}) {
        b.push_back(static_cast<uint8_t>(v));
        b.push_back(static_cast<uint8_t>(v >> 8));
      }
    }
    Write(dir, name, b);
  };
  // 256-byte blocks clamped to odd mapping ends, two held at a time: blocks
  // are evicted and read again, reads straddle blocks. (The seed's name is
  // from the arenas the cache once carved its blocks from.)
  seed("odd-ends-tiny-arenas", 4, 1, false, {{0, 1001}, {1000, 301}}, {{0, 1001}, {2000, 301}},
       {{false, 0, 600},
        {true, 100, 50},
        {false, 400, 300},
        {false, 990, 40},
        {true, 1000, 200},
        {false, 1010, 300}});
  // Mappings that claim more than is readable (the target unmapped memory
  // since /proc/<pid>/maps was read): blocks fail, reads go direct; one
  // block held.
  seed("maps-claim-unreadable", 6, 40, false, {{0, 8000}}, {{0, 3000}, {3000, 1000}, {5000, 100}},
       {{false, 0, 2900}, {false, 2990, 1500}, {true, 2500, 10}, {false, 2500, 5000}});
  // The last mapping ends at the top of the address space; a read past it
  // must fail, not wrap around. Eight blocks held.
  seed("top-of-address-space", 12, 255, true, {{0xfff0, 0xffff}, {0xfff8, 0xffff}},
       {{0xfff0, 0xffff}, {0xfff8, 0xffff}},
       {{false, 0xfff8, 0xfff0}, {true, 0xfffe, 0x100}, {false, 0xffff, 0xffff}});
}

// Functions whose code the Go layer reads (runtime-variable scan, moduledata).
bool CodeIsRead(std::string_view name) {
  static const char* const kNames[] = {"runtime.schedinit",
                                       "runtime.mProf_FlushLocked",
                                       "runtime.stkbucket",
                                       "runtime.MemProfile",
                                       "runtime.memProfileInternal",
                                       "runtime.mProf_Free",
                                       "runtime.mProf_Flush",
                                       "runtime.mProf_Malloc",
                                       "runtime.profilealloc",
                                       "runtime.allocmcache",
                                       "runtime.init",
                                       "main.main"};
  return std::find(std::begin(kNames), std::end(kNames), name) != std::end(kNames);
}

// A 64-bit little-endian Go executable with its executable PT_LOAD replaced
// by one PT_LOAD per function in CodeIsRead and for the first function (the .text section becomes
// NOBITS), every other segment, the notes and the section headers kept.
Buf CompactGoElf(const Buf& in) {
  using goheap2pprof::ElfFile;
  using goheap2pprof::GoBinary;
  using goheap2pprof::Pclntab;
  const ElfFile elf = ElfFile::FromBytes(in, "go binary");
  const GoBinary bin(elf);
  const Pclntab tab = bin.OpenPclntab(0);
  struct Range {
    uint64_t start, end;
  };
  std::vector<Range> code;
  for (uint32_t i = 0; i < tab.nfunc(); ++i) {
    const goheap2pprof::FuncRef f = tab.FuncAt(i);
    // The first function too: the moduledata's text start must be code.
    if (i != 0 && !CodeIsRead(tab.FuncName(f))) continue;
    const uint64_t end = i + 1 < tab.nfunc() ? tab.FuncAt(i + 1).entry : tab.text_end();
    code.push_back({f.entry, end});
  }

  Elf64_Ehdr eh;
  std::memcpy(&eh, in.data(), sizeof(eh));
  std::vector<Elf64_Phdr> ph(eh.e_phnum);
  std::memcpy(ph.data(), in.data() + eh.e_phoff, ph.size() * sizeof(Elf64_Phdr));
  std::vector<Elf64_Shdr> sh(eh.e_shnum);
  std::memcpy(sh.data(), in.data() + eh.e_shoff, sh.size() * sizeof(Elf64_Shdr));

  // New program headers: code chunks instead of the executable segment.
  std::vector<Elf64_Phdr> out_ph;
  std::vector<std::pair<Elf64_Phdr*, uint64_t>> copies;  // phdr, old offset
  const Elf64_Phdr* text_seg = nullptr;
  for (const Elf64_Phdr& p : ph) {
    if (p.p_type == PT_LOAD && (p.p_flags & PF_X)) {
      text_seg = &p;
      for (const Range& r : code) {
        Elf64_Phdr c = p;
        c.p_vaddr = c.p_paddr = r.start;
        c.p_filesz = c.p_memsz = r.end - r.start;
        c.p_offset = p.p_offset + (r.start - p.p_vaddr);
        out_ph.push_back(c);
      }
    } else if (p.p_type != PT_PHDR) {
      out_ph.push_back(p);
    }
  }
  Buf out(sizeof(Elf64_Ehdr) + out_ph.size() * sizeof(Elf64_Phdr), 0);
  auto append = [&](uint64_t old_offset, uint64_t size) {
    out.resize((out.size() + 15) / 16 * 16, 0);
    const uint64_t at = out.size();
    out.insert(out.end(), in.begin() + old_offset, in.begin() + old_offset + size);
    return at;
  };
  // Segment contents, remembering where each old file range went.
  struct Moved {
    uint64_t old_offset, size, new_offset;
  };
  std::vector<Moved> moved;
  for (Elf64_Phdr& p : out_ph) {
    if (p.p_filesz == 0) continue;
    const uint64_t old = p.p_offset;
    p.p_offset = append(old, p.p_filesz);
    moved.push_back({old, p.p_filesz, p.p_offset});
  }
  auto relocate = [&](uint64_t old_offset, uint64_t size) -> std::optional<uint64_t> {
    for (const Moved& m : moved) {
      if (old_offset >= m.old_offset && old_offset + size <= m.old_offset + m.size) {
        return m.new_offset + (old_offset - m.old_offset);
      }
    }
    return std::nullopt;
  };
  for (Elf64_Shdr& s : sh) {
    if (s.sh_type == SHT_NULL || s.sh_type == SHT_NOBITS) continue;
    const bool in_text = text_seg != nullptr && s.sh_offset >= text_seg->p_offset &&
                         s.sh_offset < text_seg->p_offset + text_seg->p_filesz;
    if (std::optional<uint64_t> at = relocate(s.sh_offset, s.sh_size)) {
      s.sh_offset = *at;
    } else if (in_text && (s.sh_flags & SHF_EXECINSTR)) {
      s.sh_type = SHT_NOBITS;  // the code is only in the chunks
    } else {
      s.sh_offset = append(s.sh_offset, s.sh_size);  // notes, .shstrtab
    }
  }
  // Notes live in the executable segment: point PT_NOTE at their new place.
  for (Elf64_Phdr& p : out_ph) {
    if (p.p_type != PT_NOTE) continue;
    for (const Elf64_Shdr& s : sh) {
      if (s.sh_type == SHT_NOTE && s.sh_addr == p.p_vaddr) p.p_offset = s.sh_offset;
    }
  }
  out.resize((out.size() + 15) / 16 * 16, 0);
  eh.e_phoff = sizeof(Elf64_Ehdr);
  eh.e_phnum = static_cast<uint16_t>(out_ph.size());
  eh.e_shoff = out.size();
  std::memcpy(out.data(), &eh, sizeof(eh));
  std::memcpy(out.data() + sizeof(eh), out_ph.data(), out_ph.size() * sizeof(Elf64_Phdr));
  const uint8_t* shb = reinterpret_cast<const uint8_t*>(sh.data());
  out.insert(out.end(), shb, shb + sh.size() * sizeof(Elf64_Shdr));
  return out;
}

void GoElfSeed(const fs::path& dir, const std::string& binary, const std::string& name) {
  std::ifstream f(binary, std::ios::binary);
  const Buf in((std::istreambuf_iterator<char>(f)), {});
  const Buf out = CompactGoElf(in);
  Write(dir, name, out);
  // Say how far the Go layer gets on the seed.
  const goheap2pprof::ElfFile elf = goheap2pprof::ElfFile::FromBytes(out, name);
  const goheap2pprof::GoBinary bin(elf);
  const goheap2pprof::Pclntab tab = bin.OpenPclntab(0);
  std::string vars;
  try {
    const goheap2pprof::RuntimeVariables v = goheap2pprof::LocateRuntimeVariables(
        bin, goheap2pprof::TraitsForVersion(*bin.version()).variables);
    vars = "runtime variables found";
  } catch (const goheap2pprof::Error& e) {
    vars = std::string("runtime variables: ") + e.what();
  }
  std::printf("%s: %zu bytes (from %zu), %s, %llu functions, %s\n", name.c_str(), out.size(),
              in.size(),
              bin.version() ? goheap2pprof::FormatGoVersion(*bin.version()).c_str() : "no version",
              static_cast<unsigned long long>(tab.nfunc()), vars.c_str());
}

// Cores as the kernel and gdb write them, for a fixed-address executable
// whose header page (with both build IDs) is dumped.
void CoreSeeds(const fs::path& dir) {
  using namespace goheap2pprof::testing_core;
  constexpr uint64_t kText = 0x400000, kData = 0x403000, kHeap = 0xc000000000;
  const std::vector<Elf64_Phdr> loads = {Load(0, kText, 0x2000, 0x2000, PF_R | PF_X),
                                         Load(0x3000, kData, 0x1000, 0x1800, PF_R | PF_W)};
  for (bool gdb : {false, true}) {
    SyntheticCore c;
    c.AddSegment(
        kText, 0x2000, PF_R | PF_X,
        HeaderPage(ET_EXEC, kText + 0x100, loads, "go/build/id", {1, 2, 3, 4, 5, 6, 7, 8}));
    c.AddSegment(kData, 0x1000, PF_R | PF_W, Buf(0x100, 0x22));
    c.AddSegment(kHeap, 0x400, PF_R | PF_W, Buf(0x400, 0x33));
    c.AddSegment(kHeap + 0x1000, 0x10000, 0);
    c.AddPrstatus(6);
    c.AddPrpsinfo(1234, 1, 0, "seed", "seed -x");
    c.AddSiginfo(6, -6);
    c.AddAuxv({{3, kText + 64}, {9, kText + 0x100}});
    const uint64_t page = gdb ? 1 : 4096;
    c.AddFileNote(page, {{kText, kText + 0x2000, 0, "/bin/seed"},
                         {kData, kData + 0x1000, 0x3000 / page, "/bin/seed"}});
    if (gdb) c.AddGdbNote();
    Write(dir, gdb ? "gdb-like" : "kernel-like", c.Build());
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2 && argc != 4) {
    std::fprintf(stderr, "usage: %s <corpus-dir> [go-binary seed-name]\n", argv[0]);
    return 2;
  }
  fs::path root(argv[1]);
  PclntabSeeds(root / "pclntab");
  BuildInfoSeeds(root / "buildinfo");
  ProcfsSeeds(root / "procfs");
  HeapSeeds(root / "heap");
  CoreSeeds(root / "core");
  BlockCacheSeeds(root / "block_cache");
  if (argc == 4) GoElfSeed(root / "elf", argv[2], argv[3]);
  return 0;
}
