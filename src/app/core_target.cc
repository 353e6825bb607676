#include "app/core_target.h"

#include <elf.h>
#include <sys/stat.h>

#include <algorithm>
#include <map>
#include <utility>

#include "base/error.h"

namespace goheap2pprof {

namespace {

// x86-64's legacy vsyscall page, at a fixed address in every process.
constexpr uint64_t kVsyscallX86 = 0xffffffffff600000;
constexpr std::string_view kDeleted = " (deleted)";

std::string WithoutDeleted(std::string path) {
  if (path.ends_with(kDeleted)) path.resize(path.size() - kDeleted.size());
  return path;
}

std::vector<ElfSegment> LoadsOf(const ElfFile& elf) {
  std::vector<ElfSegment> out;
  for (const ElfSegment& s : elf.segments()) {
    if (s.type == PT_LOAD) out.push_back(s);
  }
  return out;
}

// Mappings of the executable that no PT_LOAD of `elf` placed at `bias`
// explains: each must map file bytes of one segment at that segment's
// address. (A segment may be split into several mappings by mprotect, e.g.
// RELRO, so a mapping may start inside its segment.)
std::optional<std::string> MappingsMismatch(const ElfFile& elf, const std::vector<MapsEntry>& maps,
                                            uint64_t inode, uint64_t bias, uint64_t page_size) {
  for (const MapsEntry& e : maps) {
    if (inode == 0 || e.inode != inode) continue;
    bool placed = false;
    for (const ElfSegment& s : LoadsOf(elf)) {
      // vaddr and offset are congruent modulo the page size, so a file offset
      // inside the segment has one address.
      const uint64_t seg_page_off = s.offset & ~(page_size - 1);
      if (e.offset < seg_page_off || e.offset >= s.offset + std::max(s.filesz, uint64_t{1}))
        continue;
      if (e.start == s.vaddr - s.offset + e.offset + bias) {
        placed = true;
        break;
      }
    }
    if (!placed) {
      return Concat("the core maps it at ", Hex(e.start), " from file offset ", Hex(e.offset),
                    ", where none of its PT_LOAD segments would be at load bias ", Hex(bias));
    }
  }
  return std::nullopt;
}

}  // namespace

std::vector<MapsEntry> CoreMaps(const CoreFile& core) {
  std::map<std::string, uint64_t> inodes;  // path -> synthetic inode
  for (const CoreFileMapping& m : core.file_mappings()) {
    inodes.emplace(m.path, inodes.size() + 1);
  }
  const std::optional<uint64_t> vdso = core.auxv(AT_SYSINFO_EHDR);
  std::vector<MapsEntry> maps;
  maps.reserve(core.segments().size());
  for (const CoreSegment& seg : core.segments()) {
    MapsEntry e;
    e.start = seg.vaddr;
    e.end = seg.end();
    e.perms = {(seg.flags & PF_R) ? 'r' : '-', (seg.flags & PF_W) ? 'w' : '-',
               (seg.flags & PF_X) ? 'x' : '-', 'p'};
    e.dev = "00:00";
    // NT_FILE has one entry per file-backed mapping, starting where it does.
    for (const CoreFileMapping& m : core.file_mappings()) {
      if (m.start == seg.vaddr) {
        e.path = m.path;
        e.offset = m.file_offset;
        e.inode = inodes[m.path];
        break;
      }
    }
    if (e.path.empty() && vdso && *vdso == seg.vaddr) e.path = "[vdso]";
    if (e.path.empty() && core.machine() == EM_X86_64 && seg.vaddr == kVsyscallX86) {
      e.path = "[vsyscall]";
    }
    maps.push_back(std::move(e));
  }
  return maps;
}

std::optional<std::string> DumpedHeaderMismatch(const DumpedElfHeader& dumped,
                                                const ElfFile& file) {
  if (dumped.type != file.type())
    return Concat("ELF type ", file.type(), " vs ", dumped.type, " in the core");
  if (dumped.machine != file.machine()) return std::string("another machine");
  if (dumped.entry != file.entry()) {
    return Concat("entry point ", Hex(file.entry()), " vs ", Hex(dumped.entry), " in the core");
  }
  // Parse the file's first bytes exactly as the dumped page was parsed, so
  // a build ID outside the dumped part is absent on both sides.
  std::optional<DumpedElfHeader> mine =
      ParseDumpedElfHeader(*file.FileRange(0, std::min<uint64_t>(file.file_size(), 4096)));
  if (!mine) return std::string("not an ELF file");
  if (dumped.go_build_id != mine->go_build_id) {
    return Concat("Go build ID ", mine->go_build_id.empty() ? "(none)" : mine->go_build_id, " vs ",
                  dumped.go_build_id.empty() ? "(none)" : dumped.go_build_id, " in the core");
  }
  if (dumped.gnu_build_id != mine->gnu_build_id) {
    return Concat("GNU build ID ", mine->gnu_build_id.empty() ? "(none)" : mine->gnu_build_id,
                  " vs ", dumped.gnu_build_id.empty() ? "(none)" : dumped.gnu_build_id,
                  " in the core");
  }
  if (dumped.phdrs_complete) {
    const std::vector<ElfSegment> loads = LoadsOf(file);
    bool same = loads.size() == dumped.loads.size();
    for (size_t i = 0; same && i < loads.size(); ++i) {
      const ElfSegment& a = loads[i];
      const ElfSegment& b = dumped.loads[i];
      // p_filesz may differ: strip trims trailing zeros of the last data
      // segment, which loads the same.
      same = a.offset == b.offset && a.vaddr == b.vaddr && a.memsz == b.memsz && a.flags == b.flags;
    }
    if (!same) return std::string("different PT_LOAD segments");
  }
  return std::nullopt;
}

namespace {

// Step 1 of ChooseCoreExecutable: which file, --exe or the one mapped at the
// entry point. Sets out's mapped_path and inode from the core's mappings.
std::string ExecutablePath(const CoreFile& core, const std::vector<MapsEntry>& maps,
                           const CoreExecutableOptions& options, uint64_t entry,
                           CoreExecutable& out) {
  const CoreFileMapping* at_entry = core.FileMappingAt(entry);
  if (at_entry != nullptr) {
    out.mapped_path = at_entry->path;
    for (const MapsEntry& e : maps) {
      if (e.path == at_entry->path && e.inode != 0) out.inode = e.inode;
    }
  }
  if (!options.path.empty()) {
    out.notes.push_back(Concat("executable ", options.path, " (--exe)"));
    return options.path;
  }
  if (!core.has_file_note()) {
    throw Error(ErrorKind::kUsage, core.name(),
                " has no NT_FILE note, so it does not say which executable the process ran")
        .WithHint("pass --exe FILE with the program the process ran");
  }
  if (at_entry == nullptr) {
    throw Error(ErrorKind::kMalformed, core.name(), ": no NT_FILE mapping holds the entry point ",
                Hex(entry));
  }
  std::string path = WithoutDeleted(at_entry->path);
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    throw Error(ErrorKind::kUsage, "the executable the core names, ", path, ", does not exist here")
        .WithHint("pass --exe FILE with a copy of the program the process ran");
  }
  out.notes.push_back(
      Concat("executable ", path, " (NT_FILE mapping at AT_ENTRY ", Hex(entry), ")"));
  return path;
}

// AT_PAGESZ is the kernel's page size (4 KiB, or up to 64 KiB on arm64).
uint64_t KernelPageSize(const CoreFile& core) {
  uint64_t page_size = core.auxv(AT_PAGESZ).value_or(4096);
  if (page_size == 0 || (page_size & (page_size - 1)) != 0) page_size = 4096;
  return page_size;
}

// Without NT_FILE the maps have no paths: the mappings that start where a
// PT_LOAD of the file lands at this bias are taken to be the file's.
void NameMappingsByLoads(const ElfFile& elf, const std::string& path, uint64_t page_size,
                         std::vector<MapsEntry>& maps, CoreExecutable& out) {
  uint64_t inode = 1;
  for (const MapsEntry& e : maps) inode = std::max(inode, e.inode + 1);
  for (MapsEntry& e : maps) {
    if (!e.path.empty()) continue;
    for (const ElfSegment& s : LoadsOf(elf)) {
      if (e.start != (s.vaddr & ~(page_size - 1)) + out.bias) continue;
      e.path = path;
      e.offset = s.offset & ~(page_size - 1);
      e.inode = inode;
      out.mapped_path = path;
      out.inode = inode;
      break;
    }
  }
  out.notes.push_back(Concat("no NT_FILE note: the mappings of ", path,
                             " are those where its PT_LOAD segments land at the load bias"));
}

// Compares the file with the core's copy of its ELF header page, the first
// page of the file's first mapping (offset 0), if the core holds it; sets
// out.gnu_build_id from it or else from the file.
void CheckDumpedHeader(const CoreFile& core, const std::vector<MapsEntry>& maps, const ElfFile& elf,
                       const std::string& path, CoreExecutable& out,
                       std::vector<std::string>& mismatches) {
  std::optional<uint64_t> first;
  for (const MapsEntry& e : maps) {
    if (out.inode != 0 && e.inode == out.inode && e.offset == 0 && (!first || e.start < *first)) {
      first = e.start;
    }
  }
  std::optional<DumpedElfHeader> dumped;
  if (first) dumped = core.DumpedHeaderAt(*first);
  if (dumped) {
    if (auto why = DumpedHeaderMismatch(*dumped, elf)) mismatches.push_back(*why);
    out.notes.push_back(Concat("the core's ELF header page at ", Hex(*first), " gives Go build ID ",
                               dumped->go_build_id.empty() ? "(none)" : dumped->go_build_id,
                               ", GNU build ID ",
                               dumped->gnu_build_id.empty() ? "(none)" : dumped->gnu_build_id));
    out.gnu_build_id = dumped->gnu_build_id;
  } else {
    out.warnings.push_back(Concat(core.name(), " holds no ELF header page of the executable, so ",
                                  path, " is checked by its mappings only, not by build ID"));
  }
  if (out.gnu_build_id.empty()) out.gnu_build_id = elf.GnuBuildId();
}

// A file that is not the process's executable is refused, unless --force.
void RefuseMismatches(const CoreFile& core, const std::string& path,
                      const std::vector<std::string>& mismatches, bool force, CoreExecutable& out) {
  if (mismatches.empty()) return;
  std::string why;
  for (const std::string& m : mismatches) why += (why.empty() ? "" : "; ") + m;
  if (!force) {
    throw Error(ErrorKind::kUsage, path, " is not the executable of ", core.name(), ": ", why)
        .WithHint(
            "pass --exe with the exact build the process ran (a stripped copy of it is "
            "fine), or --force to use this one anyway");
  }
  out.warnings.push_back(Concat(path, " does not match ", core.name(), " (", why,
                                "); using it anyway because of --force"));
}

// Step 3: cross-checks the load bias with libdwfl, which places the module
// from the ELF header it finds in the core's memory.
void CrossCheckBias(const CoreFile& core, const std::string& path, uint64_t entry, bool mismatched,
                    CoreExecutable& out) {
  if (std::optional<DwflCoreModule> mod = DwflModuleAt(core, path, entry)) {
    if (mod->bias && *mod->bias != out.bias && !mismatched) {
      throw Error(ErrorKind::kMalformed, "load bias of ", path, ": AT_ENTRY - e_entry gives ",
                  Hex(out.bias), " but libdwfl places the module at bias ", Hex(*mod->bias));
    }
    out.notes.push_back(
        Concat("libdwfl: module ", mod->name, " [", Hex(mod->start), ", ", Hex(mod->end), ")",
               mod->bias ? ", load bias " + Hex(*mod->bias) : ", its file not opened",
               mod->build_id.empty() ? "" : ", build ID " + mod->build_id));
  } else {
    out.notes.push_back(Concat("libdwfl reports no module at the entry point ", Hex(entry)));
  }
}

}  // namespace

CoreExecutable ChooseCoreExecutable(const CoreFile& core, std::vector<MapsEntry>& maps,
                                    const CoreExecutableOptions& options) {
  CoreExecutable out;
  const std::optional<uint64_t> entry = core.auxv_entry();
  if (!entry) {
    throw Error(ErrorKind::kMalformed, core.name(),
                " has no AT_ENTRY in an NT_AUXV note, so its executable cannot be placed");
  }
  const std::string path = ExecutablePath(core, maps, options, *entry, out);
  out.elf = std::make_shared<const ElfFile>(ElfFile::Open(path));
  const ElfFile& elf = *out.elf;

  // 2. Is it the file the process ran? The core holds the first page of its
  //    first mapping (the ELF header, program headers and build ID notes)
  //    and its mappings; the load bias follows from the entry point.
  std::vector<std::string> mismatches;
  if (elf.machine() != core.machine()) mismatches.push_back("it is for another machine");
  out.bias = *entry - elf.entry();
  if (elf.type() == ET_EXEC && out.bias != 0) {
    mismatches.push_back(Concat("it is a fixed-address executable with entry ", Hex(elf.entry()),
                                " but the process entered at ", Hex(*entry)));
  }
  const uint64_t page_size = KernelPageSize(core);
  if (!core.has_file_note()) NameMappingsByLoads(elf, path, page_size, maps, out);
  CheckDumpedHeader(core, maps, elf, path, out, mismatches);
  if (auto why = MappingsMismatch(elf, maps, out.inode, out.bias, page_size)) {
    mismatches.push_back(*why);
  }
  RefuseMismatches(core, path, mismatches, options.force, out);

  CrossCheckBias(core, path, *entry, !mismatches.empty(), out);
  out.notes.push_back(Concat("load bias ", Hex(out.bias), " (AT_ENTRY ", Hex(*entry), " - e_entry ",
                             Hex(elf.entry()), ")"));
  return out;
}

std::vector<ProfileMapping> CoreProfileMappings(const CoreFile& core,
                                                const std::vector<MapsEntry>& maps,
                                                const CoreExecutable& exe) {
  std::vector<ProfileMapping> out;
  std::map<std::string, std::string> build_ids;  // by path
  for (const MapsEntry& e : maps) {
    if (e.perms.size() < 4 || e.perms[2] != 'x' || e.path.empty()) continue;
    const std::string file = WithoutDeleted(e.path);
    ProfileMapping m{e.start, e.end, e.offset, file, "", false};
    if (exe.inode != 0 && e.inode == exe.inode) {
      m.build_id = exe.gnu_build_id;
    } else if (file[0] == '/') {
      auto it = build_ids.find(e.path);
      if (it == build_ids.end()) {
        std::string id;
        const CoreFileMapping* first = core.FirstMappingOf(e.path);
        std::optional<DumpedElfHeader> dumped =
            first ? core.DumpedHeaderAt(first->start) : std::nullopt;
        if (dumped && !dumped->gnu_build_id.empty()) {
          id = dumped->gnu_build_id;
        } else if (Expected<ElfFile> elf = ElfFile::TryOpen(file)) {
          // Not here or not an ELF we read: runtime/pprof reports none either.
          id = elf->GnuBuildId();
        }
        it = build_ids.emplace(e.path, id).first;
      }
      m.build_id = it->second;
    }
    out.push_back(std::move(m));
  }
  return out;
}

std::vector<std::string> DescribeCore(const CoreFile& core) {
  std::vector<std::string> lines;
  lines.push_back(Concat("core ", core.name(), " written by ", CoreProducerName(core.producer()),
                         core.has_file_note()
                             ? Concat(" (NT_FILE page size ", core.file_note_page_size(), ")")
                             : std::string(" (no NT_FILE note)"),
                         ", ", core.segments().size(), " segments"));
  if (const auto& p = core.process()) {
    lines.push_back(Concat("process ", p->pid, " (", p->comm, "), uid ", p->uid, ", ",
                           core.threads(), " threads, command line: ", p->psargs));
  } else {
    lines.push_back(
        Concat("no NT_PRPSINFO note: pid and command unknown; ", core.threads(), " threads"));
  }
  if (core.producer() == CoreProducer::kGdb) {
    // gcore stops a live process to dump it: its signal is that stop.
    lines.push_back("the process was alive: gcore stopped it to write the core");
  } else if (const auto& s = core.signal(); s && s->signo != 0) {
    lines.push_back(Concat("signal ", SignalName(s->signo), " (", s->signo,
                           s->from_siginfo ? Concat(", si_code ", s->code) : std::string(), ")"));
  } else {
    lines.push_back("no signal: the process was alive when the core was written (gcore)");
  }
  return lines;
}

}  // namespace goheap2pprof
