#include "app/executable.h"

#include <elf.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <utility>

#include "base/error.h"
#include "gobin/go_binary.h"

namespace goheap2pprof {

namespace {

constexpr uint64_t kPageMask = ~uint64_t{0xfff};

std::string ProcPath(pid_t pid, std::string_view rest) {
  return "/proc/" + std::to_string(pid) + "/" + std::string(rest);
}

std::string StripDeleted(std::string path) {
  constexpr std::string_view kDeleted = " (deleted)";
  if (path.ends_with(kDeleted)) path.resize(path.size() - kDeleted.size());
  return path;
}

// The PT_LOAD whose first page is mapped at file offset `offset`, if any.
const ElfSegment* LoadAtOffset(const ElfFile& elf, uint64_t offset) {
  for (const ElfSegment& seg : elf.segments()) {
    if (seg.type == PT_LOAD && (seg.offset & kPageMask) == offset) return &seg;
  }
  return nullptr;
}

bool LooksLikeGo(const ElfFile& elf) {
  if (!elf.GoBuildId().empty() || elf.FindSection(".gopclntab") ||
      elf.FindSection(".go.buildinfo")) {
    return true;
  }
  try {
    return GoBinary(elf).version().has_value();
  } catch (const Error&) {
    return false;
  }
}

// One ELF file mapped by the process: its identity and the opened file.
struct MappedElf {
  FileIdentity id;
  ElfFile elf;
};

// Every distinct file-backed mapping at offset 0 that opens as an ELF for a
// machine other than `host_machine` (i.e. a qemu guest's files).
std::vector<MappedElf> GuestFiles(pid_t pid, const std::vector<MapsEntry>& maps,
                                  uint16_t host_machine) {
  std::vector<MappedElf> out;
  std::set<std::pair<uint64_t, std::string>> seen;
  for (const MapsEntry& e : maps) {
    if (e.inode == 0 || e.offset != 0 || e.path.empty() || e.path[0] != '/') continue;
    if (!seen.emplace(e.inode, e.path).second) continue;
    std::optional<ElfFile> elf = OpenMappedFile(pid, e);
    if (!elf || elf->machine() == host_machine) continue;
    out.push_back({FileIdentity{e.inode, e.path}, std::move(*elf)});
  }
  return out;
}

// The guest program among the guest's Go files: the only one, else the one
// named on qemu's command line (resolved against the target's cwd).
std::optional<size_t> PickGuestProgram(pid_t pid, const std::vector<MappedElf>& go_files) {
  if (go_files.size() == 1) return 0;
  std::string cmdline;
  try {
    cmdline = ReadProcFile(pid, "cmdline");
  } catch (const Error&) {
    return std::nullopt;
  }
  std::error_code ec;
  std::filesystem::path cwd = std::filesystem::read_symlink(ProcPath(pid, "cwd"), ec);
  std::vector<std::string> args;
  for (size_t pos = 0; pos < cmdline.size();) {
    size_t end = cmdline.find('\0', pos);
    if (end == std::string::npos) end = cmdline.size();
    args.push_back(cmdline.substr(pos, end - pos));
    pos = end + 1;
  }
  for (size_t i = 1; i < args.size(); ++i) {
    std::filesystem::path arg(args[i]);
    if (arg.is_relative()) arg = cwd / arg;
    std::string resolved = arg.lexically_normal().string();
    for (size_t k = 0; k < go_files.size(); ++k) {
      if (StripDeleted(go_files[k].id.path) == resolved) return k;
    }
  }
  return std::nullopt;
}

std::string CandidateList(const std::vector<MappedElf>& files) {
  std::string text;
  for (const MappedElf& f : files) text += (text.empty() ? "" : ", ") + f.id.path;
  return text;
}

bool SameSegments(const ElfFile& a, const ElfFile& b) {
  std::vector<ElfSegment> la, lb;
  for (const ElfSegment& s : a.segments()) if (s.type == PT_LOAD) la.push_back(s);
  for (const ElfSegment& s : b.segments()) if (s.type == PT_LOAD) lb.push_back(s);
  if (la.size() != lb.size()) return false;
  for (size_t i = 0; i < la.size(); ++i) {
    const ElfSegment& x = la[i];
    const ElfSegment& y = lb[i];
    // p_filesz may differ: strip trims the zero bytes at the end of the last
    // data segment, which loads the same (the rest up to p_memsz is zeroed).
    if (x.offset != y.offset || x.vaddr != y.vaddr || x.memsz != y.memsz ||
        x.flags != y.flags) {
      return false;
    }
  }
  return true;
}

std::optional<std::string> CompareId(std::string_view what, const std::string& given,
                                     const std::string& running) {
  if (given == running) return std::nullopt;
  return std::string(what) + " " + (given.empty() ? "(none)" : given) + " vs running " +
         (running.empty() ? "(none)" : running);
}

}  // namespace

bool IsQemuUserPath(std::string_view path) {
  path = path.substr(path.rfind('/') == std::string_view::npos ? 0 : path.rfind('/') + 1);
  return path.starts_with("qemu-") && !path.starts_with("qemu-system-") &&
         !path.starts_with("qemu-img") && !path.starts_with("qemu-nbd");
}

std::optional<std::string> BuildMismatch(const ElfFile& given, const ElfFile& running) {
  if (given.machine() != running.machine()) return std::string("different machine");
  if (given.type() != running.type()) return std::string("different ELF type");
  if (!SameSegments(given, running)) return std::string("different PT_LOAD segments");
  const std::string go_given = given.GoBuildId(), go_running = running.GoBuildId();
  const std::string gnu_given = given.GnuBuildId(), gnu_running = running.GnuBuildId();
  if (auto why = CompareId("Go build ID", go_given, go_running)) return why;
  if (auto why = CompareId("GNU build ID", gnu_given, gnu_running)) return why;
  if (!go_given.empty() || !gnu_given.empty()) return std::nullopt;
  // No build ID to trust: the bytes the kernel loads must be the same.
  for (const ElfSegment& seg : given.segments()) {
    if (seg.type != PT_LOAD) continue;
    std::optional<Bytes> a = given.ReadVaddrToSegmentEnd(seg.vaddr);
    std::optional<Bytes> b = running.ReadVaddrToSegmentEnd(seg.vaddr);
    if (!a || !b) continue;  // no file bytes (all zero-filled) in one of them
    const Bytes& longer = a->size() > b->size() ? *a : *b;
    const size_t common = std::min(a->size(), b->size());
    bool same = std::memcmp(a->data(), b->data(), common) == 0;
    for (size_t i = common; same && i < longer.size(); ++i) same = longer[i] == 0;
    if (!same) return "no build IDs, and the segment at " + Hex(seg.vaddr) + " differs";
  }
  return std::nullopt;
}

std::optional<std::string> LayoutMismatch(const ElfFile& given, const std::vector<MapsEntry>& maps,
                                          const FileIdentity& running) {
  // The bias comes from a mapping that starts a segment, as ComputeLoadBias
  // takes it. Other mappings may be parts of a segment (ld.so's RELRO
  // mprotect splits one) on a page that two segments share, so each needs
  // only one containing segment that agrees.
  std::optional<uint64_t> bias;
  for (const MapsEntry& e : maps) {
    if (!MapsEntryIsFile(e, running)) continue;
    if (const ElfSegment* seg = LoadAtOffset(given, e.offset)) {
      bias = e.start - (seg->vaddr & kPageMask);
      break;
    }
  }
  if (!bias) return std::string("the process maps no part of it at a segment's start");
  for (const MapsEntry& e : maps) {
    if (!MapsEntryIsFile(e, running)) continue;
    bool in_segment = false, agrees = false;
    for (const ElfSegment& s : given.segments()) {
      if (s.type != PT_LOAD || (s.offset & kPageMask) > e.offset ||
          e.offset >= s.offset + std::max<uint64_t>(s.filesz, 1)) {
        continue;
      }
      in_segment = true;
      agrees |= e.start - (e.offset - (s.offset & kPageMask)) - (s.vaddr & kPageMask) == *bias;
    }
    if (!in_segment) {
      return "its mapping at " + Hex(e.start) + " (offset " + Hex(e.offset) +
             ") is in no PT_LOAD segment of the file";
    }
    if (!agrees) {
      return "its mapping at " + Hex(e.start) + " does not fit load bias " + Hex(*bias);
    }
  }
  if (given.type() == ET_EXEC && *bias != 0) {
    return "it is a fixed-address executable but is mapped " + Hex(*bias) + " away";
  }
  return std::nullopt;
}

TargetExecutable OpenExecutable(pid_t pid, const std::vector<MapsEntry>& maps,
                                const ExecutableOptions& options) {
  const FileIdentity proc_exe = ExecutableIdentity(pid);
  std::string emulator;
  FileIdentity running = proc_exe;
  // The running file, opened, when it can be read (verification and the
  // build ID prefer it).
  std::optional<ElfFile> running_elf;
  std::vector<std::string> notes;

  if (IsQemuUserPath(proc_exe.path)) {
    // 1. A qemu-user process: the Go program is the guest, one of the files
    //    qemu maps for it (its own binary is for the host's machine).
    emulator = proc_exe.path;
    const ElfFile qemu = OpenTargetExecutable(pid);
    std::vector<MappedElf> guest = GuestFiles(pid, maps, qemu.machine());
    std::vector<MappedElf> go_files;
    for (MappedElf& f : guest) {
      if (LooksLikeGo(f.elf)) go_files.push_back(std::move(f));
    }
    std::optional<size_t> pick = PickGuestProgram(pid, go_files);
    if (!pick && !options.path.empty()) {
      // Several Go files and no command-line hint: the one --exe matches.
      const ElfFile given = ElfFile::Open(options.path);
      for (size_t k = 0; k < go_files.size() && !pick; ++k) {
        if (!BuildMismatch(given, go_files[k].elf)) pick = k;
      }
    }
    if (!pick && go_files.empty() && !options.path.empty()) {
      // The guest's files cannot be opened: the one mapping --exe fits.
      const ElfFile given = ElfFile::Open(options.path);
      std::set<std::pair<uint64_t, std::string>> fits;
      for (const MapsEntry& e : maps) {
        FileIdentity id{e.inode, e.path};
        if (e.inode == 0 || MapsEntryIsFile(e, proc_exe)) continue;
        if (!LayoutMismatch(given, maps, id)) fits.emplace(e.inode, e.path);
      }
      if (fits.size() == 1) {
        running = FileIdentity{fits.begin()->first, fits.begin()->second};
        notes.push_back("process " + std::to_string(pid) + " is the qemu-user emulator " +
                        emulator + "; its guest program is " + running.path +
                        " (by the layout of --exe)");
      }
    }
    if (!pick && running.path == proc_exe.path) {
      if (go_files.empty()) {
        throw Error(ErrorKind::kNotGo, "process ", pid, " is the emulator ", emulator,
                    ", and none of the guest files it maps is a Go program we can read",
                    guest.empty() ? "" : " (", CandidateList(guest), guest.empty() ? "" : ")")
            .WithHint("check that the guest is a 64-bit arm64/amd64 Go program; if its file "
                      "cannot be opened, pass a copy with --exe PATH");
      }
      throw Error(ErrorKind::kUnsupported, "process ", pid, " is the emulator ", emulator,
                  " and maps several Go programs (", CandidateList(go_files),
                  "); cannot tell which one is the guest")
          .WithHint("pass the guest program with --exe PATH");
    }
    if (pick) {
      running = go_files[*pick].id;
      running_elf = std::move(go_files[*pick].elf);
      notes.push_back("process " + std::to_string(pid) + " is the qemu-user emulator " +
                      emulator + "; its guest program is " + running.path);
    }
  } else {
    try {
      running_elf = OpenTargetExecutable(pid);
    } catch (const Error& e) {
      if (options.path.empty()) throw;
      // An unreadable exe (say, mode --x): --exe is checked on maps alone.
      notes.push_back(std::string("cannot read the running executable: ") + e.what());
    }
  }

  TargetExecutable target{options.path.empty() ? std::move(*running_elf)
                                               : ElfFile::Open(options.path),
                          running, "", emulator, std::move(notes), {}};
  if (options.path.empty()) {
    target.gnu_build_id = target.elf.GnuBuildId();
    return target;
  }

  // 2. --exe: the file must be the running build. Compared with the running
  //    file when it can be read, else with its mappings in /proc/<pid>/maps.
  std::optional<std::string> why = running_elf ? BuildMismatch(target.elf, *running_elf)
                                               : std::nullopt;
  if (!why) why = LayoutMismatch(target.elf, maps, running);
  target.gnu_build_id = running_elf ? running_elf->GnuBuildId() : target.elf.GnuBuildId();
  if (why) {
    const std::string text = "--exe " + options.path +
                             " does not match the executable of process " + std::to_string(pid) +
                             " (" + running.path + "): " + *why;
    if (!options.force) {
      throw Error(ErrorKind::kUsage, text)
          .WithHint("pass the build the running binary was made from (strip/objcopy keep the "
                    "build IDs, so an unstripped original matches its stripped copy), or add "
                    "--force to use this file anyway");
    }
    target.warnings.push_back(text + "; using it anyway because of --force");
  } else {
    target.notes.push_back("--exe " + options.path + " matches the running " + running.path +
                           (running_elf ? " (build IDs and segments)"
                                        : " (its mappings in /proc/<pid>/maps only)"));
  }
  return target;
}

std::vector<ProfileMapping> TargetProfileMappings(pid_t pid, const std::vector<MapsEntry>& maps,
                                                  const TargetExecutable& target) {
  if (target.emulator.empty()) {
    return ProfileMappings(pid, maps, target.running, target.gnu_build_id);
  }
  // qemu-user prints the guest's /proc/self/maps from its own, keeping only
  // guest pages (not qemu's binary, heap, [vdso] or [vsyscall]) and showing
  // the guest's protections. The host sees every guest file page as r--p, so
  // "executable for the guest" is taken from the file itself: the PT_LOAD
  // mapped at that offset has PF_X. That is what the guest's ELF loaders
  // (qemu's for the program and its interpreter, ld.so for libraries) did.
  std::vector<ProfileMapping> out;
  std::map<std::string, std::optional<ElfFile>> files;  // by path
  const uint16_t guest_machine = target.elf.machine();
  for (const MapsEntry& e : maps) {
    if (e.inode == 0 || e.path.empty() || e.path[0] != '/') continue;
    const bool is_exe = MapsEntryIsFile(e, target.running);
    const ElfFile* elf = &target.elf;
    if (!is_exe) {
      auto it = files.find(e.path);
      if (it == files.end()) it = files.emplace(e.path, OpenMappedFile(pid, e)).first;
      elf = it->second ? &*it->second : nullptr;
    }
    if (!elf || elf->machine() != guest_machine) continue;
    const ElfSegment* seg = LoadAtOffset(*elf, e.offset);
    if (!seg || !(seg->flags & PF_X)) continue;
    out.push_back({e.start, e.end, e.offset, StripDeleted(e.path),
                   is_exe ? target.gnu_build_id : elf->GnuBuildId(), false});
  }
  return out;
}

}  // namespace goheap2pprof
