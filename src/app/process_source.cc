#include "app/process_source.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <utility>

#include "base/error.h"
#include "elf/build_match.h"
#include "elf/load_bias.h"
#include "elf/process_files.h"
#include "gobin/go_binary.h"
#include "proc/address_space.h"
#include "proc/memory_reader.h"

namespace goheap2pprof {

namespace {

// What both live sources share: the process, as identified at the start,
// its address space, its maps and its memory.
struct LiveProcess {
  ProcessIdentity identity;
  AddressSpaceAnchor anchor;
  std::vector<MapsEntry> maps;
  ProcessMemoryReader memory;

  LiveProcess(const ProcessIdentity& id, AddressSpaceAnchor a, std::vector<MapsEntry> m)
      : identity(id), anchor(std::move(a)), maps(std::move(m)), memory(id.pid) {}

  void CheckSame() const {
    ProcStat at_start;
    at_start.pid = identity.pid;
    at_start.start_time = identity.start_time;
    goheap2pprof::CheckSameProcess(identity.pid, at_start);
    // Same pid, same start time, another program: an exec replaced the
    // address space the maps and the executable were read from.
    if (!anchor.StillLive()) {
      throw Error(ErrorKind::kNoSuchProcess, "process ", identity.pid,
                  " executed another program during the capture (its address space was "
                  "replaced)");
    }
  }
};

// The running file as found, before --exe is considered.
struct RunningFile {
  FileIdentity id;
  std::optional<ElfFile> elf;  // nullopt when it cannot be read
  std::string emulator;        // qemu's path for a guest
  std::vector<std::string> notes;
};

bool LooksLikeGo(const ElfFile& elf) {
  if (!elf.GoBuildId().empty() || elf.FindSection(".gopclntab") ||
      elf.FindSection(".go.buildinfo")) {
    return true;
  }
  // A corrupt build-info blob is not a Go program we can read either.
  Expected<GoBinary> bin = GoBinary::TryOpen(elf);
  return bin && bin->version().has_value();
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
  std::optional<std::string> cmdline = ReadProcFileIfPresent(pid, "cmdline");
  if (!cmdline) return std::nullopt;
  std::error_code ec;
  std::filesystem::path cwd = std::filesystem::read_symlink(ProcPath(pid, "cwd"), ec);
  std::vector<std::string> args;
  for (size_t pos = 0; pos < cmdline->size();) {
    size_t end = cmdline->find('\0', pos);
    if (end == std::string::npos) end = cmdline->size();
    args.push_back(cmdline->substr(pos, end - pos));
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

// A native process: its running file is /proc/<pid>/exe.
RunningFile FindNativeRunningFile(pid_t pid, const FileIdentity& proc_exe,
                                  const ExecutableOptions& options) {
  RunningFile running{proc_exe, std::nullopt, "", {}};
  if (options.path.empty()) {
    running.elf = OpenProcessExecutable(pid);
    return running;
  }
  // An unreadable exe (say, mode --x): --exe is checked on maps alone.
  std::string why;
  running.elf = TryOpenProcessExecutable(pid, &why);
  if (!running.elf) running.notes.push_back("cannot read the running executable: " + why);
  return running;
}

// A qemu-user process: the Go program is the guest, one of the files qemu
// maps for it (its own binary is for the host's machine).
RunningFile FindQemuGuestFile(pid_t pid, const std::vector<MapsEntry>& maps,
                              const FileIdentity& proc_exe, const ExecutableOptions& options) {
  RunningFile running{proc_exe, std::nullopt, proc_exe.path, {}};
  const std::string& emulator = running.emulator;
  const ElfFile qemu = OpenProcessExecutable(pid);
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
      running.id = FileIdentity{fits.begin()->first, fits.begin()->second};
      running.notes.push_back("process " + std::to_string(pid) + " is the qemu-user emulator " +
                              emulator + "; its guest program is " + running.id.path +
                              " (by the layout of --exe)");
    }
  }
  if (!pick && running.id.path == proc_exe.path) {
    if (go_files.empty()) {
      throw Error(ErrorKind::kNotGo, "process ", pid, " is the emulator ", emulator,
                  ", and none of the guest files it maps is a Go program we can read",
                  guest.empty() ? "" : " (", CandidateList(guest), guest.empty() ? "" : ")")
          .WithHint(
              "check that the guest is a 64-bit arm64/amd64 Go program; if its file "
              "cannot be opened, pass a copy with --exe PATH");
    }
    throw Error(ErrorKind::kUnsupported, "process ", pid, " is the emulator ", emulator,
                " and maps several Go programs (", CandidateList(go_files),
                "); cannot tell which one is the guest")
        .WithHint("pass the guest program with --exe PATH");
  }
  if (pick) {
    running.id = go_files[*pick].id;
    running.elf = std::move(go_files[*pick].elf);
    running.notes.push_back("process " + std::to_string(pid) + " is the qemu-user emulator " +
                            emulator + "; its guest program is " + running.id.path);
  }
  return running;
}

// The executable to read: the running file, or the --exe file, which must be
// the running build. It is compared with the running file when that can be
// read, else with its mappings in /proc/<pid>/maps.
TargetExecutable ChooseExecutable(pid_t pid, const std::vector<MapsEntry>& maps,
                                  RunningFile running, const ExecutableOptions& options) {
  TargetExecutable target;
  target.running = running.id;
  target.emulator = running.emulator;
  target.notes = std::move(running.notes);
  if (options.path.empty()) {
    target.gnu_build_id = running.elf->GnuBuildId();
    target.elf = std::make_shared<const ElfFile>(std::move(*running.elf));
    return target;
  }
  target.elf = std::make_shared<const ElfFile>(ElfFile::Open(options.path));
  const ElfFile& given = *target.elf;
  std::optional<std::string> why = running.elf ? BuildMismatch(given, *running.elf) : std::nullopt;
  if (!why) why = LayoutMismatch(given, maps, running.id);
  target.gnu_build_id = running.elf ? running.elf->GnuBuildId() : given.GnuBuildId();
  if (why) {
    const std::string text = "--exe " + options.path +
                             " does not match the executable of process " + std::to_string(pid) +
                             " (" + running.id.path + "): " + *why;
    if (!options.force) {
      throw Error(ErrorKind::kUsage, text)
          .WithHint(
              "pass the build the running binary was made from (strip/objcopy keep the "
              "build IDs, so an unstripped original matches its stripped copy), or add "
              "--force to use this file anyway");
    }
    target.warnings.push_back(text + "; using it anyway because of --force");
  } else {
    target.notes.push_back(
        "--exe " + options.path + " matches the running " + running.id.path +
        (running.elf ? " (build IDs and segments)" : " (its mappings in /proc/<pid>/maps only)"));
  }
  return target;
}

// A live process running its own executable.
class ProcessSource : public CaptureSource {
 public:
  ProcessSource(const ProcessIdentity& id, AddressSpaceAnchor anchor, std::vector<MapsEntry> maps,
                const FileIdentity& proc_exe, const ExecutableOptions& options)
      : process_(id, std::move(anchor), std::move(maps)),
        executable_(ChooseExecutable(id.pid, process_.maps,
                                     FindNativeRunningFile(id.pid, proc_exe, options), options)) {}

  const ProcessIdentity& identity() const override { return process_.identity; }
  const std::vector<MapsEntry>& mappings() const override { return process_.maps; }
  const TargetExecutable& executable() const override { return executable_; }
  MemoryReader& memory() override { return process_.memory; }
  void CheckSameProcess() const override { process_.CheckSame(); }

  // Made once per source (a capture asks twice: its build and its state's
  // key), from the maps read when it was opened.
  std::vector<ProfileMapping> ProfileMappings() const override {
    std::call_once(profile_mappings_once_, [this] {
      const pid_t pid = process_.identity.pid;
      // Not readable or not ELF: runtime/pprof reports no build ID either.
      profile_mappings_ = ExecutableFileMappings(
          process_.maps, executable_.running, executable_.gnu_build_id,
          [pid](const MapsEntry& e) { return MappedFileGnuBuildId(pid, e); });
    });
    return profile_mappings_;
  }

 private:
  LiveProcess process_;
  TargetExecutable executable_;
  mutable std::once_flag profile_mappings_once_;
  mutable std::vector<ProfileMapping> profile_mappings_;
};

// A qemu-user emulator process, captured as its guest program.
class QemuUserSource : public CaptureSource {
 public:
  QemuUserSource(const ProcessIdentity& id, AddressSpaceAnchor anchor, std::vector<MapsEntry> maps,
                 const FileIdentity& proc_exe, const ExecutableOptions& options)
      : process_(id, std::move(anchor), std::move(maps)),
        executable_(ChooseExecutable(id.pid, process_.maps,
                                     FindQemuGuestFile(id.pid, process_.maps, proc_exe, options),
                                     options)) {}

  const ProcessIdentity& identity() const override { return process_.identity; }
  const std::vector<MapsEntry>& mappings() const override { return process_.maps; }
  const TargetExecutable& executable() const override { return executable_; }
  MemoryReader& memory() override { return process_.memory; }
  void CheckSameProcess() const override { process_.CheckSame(); }

  // qemu-user prints the guest's /proc/self/maps from its own, keeping only
  // guest pages (not qemu's binary, heap, [vdso] or [vsyscall]) and showing
  // the guest's protections. The host sees every guest file page as r--p, so
  // "executable for the guest" is taken from the file itself: the PT_LOAD
  // mapped at that offset has PF_X. That is what the guest's ELF loaders
  // (qemu's for the program and its interpreter, ld.so for libraries) did.
  std::vector<ProfileMapping> ProfileMappings() const override {
    std::vector<ProfileMapping> out;
    std::map<std::string, std::optional<ElfFile>> files;  // by path
    const ElfFile& exe = *executable_.elf;
    const uint16_t guest_machine = exe.machine();
    for (const MapsEntry& e : process_.maps) {
      if (e.inode == 0 || e.path.empty() || e.path[0] != '/') continue;
      const bool is_exe = MapsEntryIsFile(e, executable_.running);
      const ElfFile* elf = &exe;
      if (!is_exe) {
        auto it = files.find(e.path);
        if (it == files.end()) {
          it = files.emplace(e.path, OpenMappedFile(process_.identity.pid, e)).first;
        }
        elf = it->second ? &*it->second : nullptr;
      }
      if (!elf || elf->machine() != guest_machine) continue;
      const ElfSegment* seg = LoadSegmentAtOffset(*elf, e.offset);
      if (!seg || !IsExecutableSegment(*seg)) continue;
      out.push_back({e.start, e.end, e.offset, StripDeleted(e.path),
                     is_exe ? executable_.gnu_build_id : elf->GnuBuildId(), false});
    }
    return out;
  }

 private:
  LiveProcess process_;
  TargetExecutable executable_;
};

}  // namespace

ProcessIdentity IdentifyLiveProcess(pid_t pid) {
  const ProcStat st = IdentifyProcess(pid);
  return {st.pid, st.start_time, st.comm};
}

std::unique_ptr<CaptureSource> OpenProcessSource(const ProcessIdentity& id,
                                                 const ExecutableOptions& options) {
  // The address space is anchored before anything is read from it, so that
  // an exec at any later point is seen by CheckSameProcess. When the anchor
  // cannot be opened, the maps say why with the clearest message (they are
  // the first thing a user without access to the target is refused).
  std::optional<AddressSpaceAnchor> anchor = AddressSpaceAnchor::TryOpen(id.pid);
  std::vector<MapsEntry> maps = ReadProcMaps(id.pid);
  const FileIdentity proc_exe = ExecutableIdentity(id.pid);
  if (!anchor) anchor = AddressSpaceAnchor::Open(id.pid);
  if (IsQemuUserPath(proc_exe.path)) {
    return std::make_unique<QemuUserSource>(id, std::move(*anchor), std::move(maps), proc_exe,
                                            options);
  }
  return std::make_unique<ProcessSource>(id, std::move(*anchor), std::move(maps), proc_exe,
                                         options);
}

bool IsQemuUserPath(std::string_view path) {
  path = path.substr(path.rfind('/') == std::string_view::npos ? 0 : path.rfind('/') + 1);
  return path.starts_with("qemu-") && !path.starts_with("qemu-system-") &&
         !path.starts_with("qemu-img") && !path.starts_with("qemu-nbd");
}

}  // namespace goheap2pprof
