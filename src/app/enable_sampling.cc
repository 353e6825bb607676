#include "app/enable_sampling.h"

#include <elf.h>

#include <charconv>
#include <limits>
#include <memory>
#include <optional>
#include <vector>

#include "app/executable_analysis.h"
#include "base/error.h"
#include "elf/load_bias.h"
#include "runtime/sampling_switch.h"

namespace goheap2pprof {
namespace {

constexpr std::string_view kVariable = "runtime.MemProfileRate";

// Go's int is 64 bits on every architecture goheap2pprof reads.
int64_t ReadRate(MemoryReader& mem, uint64_t addr) {
  return static_cast<int64_t>(mem.ReadU64(addr, kVariable));
}

// Refuses an address that is not proven to be the variable's word in
// writable memory of the executable: 8-aligned, inside a PT_LOAD segment the
// file marks writable (link-time address), and inside a mapping of the
// target that is writable now.
void ProveWritable(const ElfFile& elf, uint64_t link_addr, uint64_t addr,
                   const std::vector<MapsEntry>& maps) {
  if (addr % 8 != 0) {
    throw Error(ErrorKind::kUnsupported, kVariable, " at ", Hex(addr),
                " is not 8-byte aligned: refusing to write there");
  }
  bool in_segment = false;
  for (const ElfSegment& s : elf.segments()) {
    in_segment |= IsLoadSegment(s) && (s.flags & PF_W) != 0 && link_addr >= s.vaddr &&
                  link_addr + 8 <= s.vaddr + s.memsz;
  }
  if (!in_segment) {
    throw Error(ErrorKind::kUnsupported, kVariable, " at link-time address ", Hex(link_addr),
                " is in no writable segment of the executable: refusing to write there");
  }
  for (const MapsEntry& m : maps) {
    if (addr >= m.start && addr + 8 <= m.end) {
      if (m.perms.size() >= 2 && m.perms[1] == 'w') return;
      break;
    }
  }
  throw Error(ErrorKind::kUnsupported, kVariable, " at ", Hex(addr),
              " is in no writable mapping of the process: refusing to write there");
}

// Fails closed for a Go version no row of runtime/sampling_switch.h proves;
// returns the row's reason why the rate alone takes effect.
std::string_view ProveSwitch(const ExecutableAnalysis& analysis) {
  const std::optional<SamplingSwitch> rule = SamplingSwitchFor(analysis.traits().version);
  if (!rule) {
    throw Error(ErrorKind::kUnsupported, "enable-sampling: what makes a new ", kVariable,
                " take effect is proven for ", ProvenSamplingSwitchVersions(),
                " only; this "
                "program was built with ",
                analysis.go_version())
        .WithHint("capture it as it is, or link runtime/pprof into the program and restart it");
  }
  return rule->why;
}

}  // namespace

int64_t ParseSamplingRate(std::string_view text) {
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  const std::string_view unit(end, static_cast<size_t>(text.data() + text.size() - end));
  const int64_t scale = unit.empty() || unit == "B" ? 1
                        : unit == "KiB"             ? 1024
                        : unit == "MiB"             ? 1024 * 1024
                                                    : 0;
  if (ec != std::errc() || scale == 0) {
    throw Error(ErrorKind::kUsage, "--rate ", text,
                ": not a size (bytes, or with a unit: 512KiB, 4MiB; 1 samples every allocation)");
  }
  if (value <= 0) {
    throw Error(ErrorKind::kUsage, "--rate ", text, ": the rate must be positive")
        .WithHint("turn sampling off with --off");
  }
  if (value > std::numeric_limits<int64_t>::max() / scale) {
    throw Error(ErrorKind::kUsage, "--rate ", text, ": too large");
  }
  return value * scale;
}

RateWrite WriteRate(MemoryReader& mem, WordWriter& writer, uint64_t addr, int64_t rate,
                    const WriteLog& log) {
  RateWrite w;
  w.old_rate = ReadRate(mem, addr);
  int64_t seen = w.old_rate;
  while (seen != rate) {
    if (w.writes == kMaxRateWrites) {
      throw Error(ErrorKind::kMalformed, "could not set ", kVariable, " at ", Hex(addr), " to ",
                  rate, ": after ", w.writes, " writes it read back as ", seen,
                  " (the program keeps assigning it itself)")
          .WithHint("the program sets its own rate; leave it, or change it in the program");
    }
    writer.WriteU64(addr, static_cast<uint64_t>(rate));
    ++w.writes;
    const int64_t before = seen;
    seen = ReadRate(mem, addr);
    log(Concat("write ", kVariable, " at ", Hex(addr), ": ", before, " -> ", rate, " (read back ",
               seen, seen == rate ? "" : ": lost to the program's own write", ")"));
  }
  w.new_rate = seen;
  return w;
}

SamplingChange SetSamplingRate(pid_t pid, const EnableSamplingOptions& options,
                               const WriteLog& log) {
  std::unique_ptr<CaptureSource> source =
      OpenProcessSource(IdentifyLiveProcess(pid), options.executable);
  const std::shared_ptr<const ExecutableAnalysis> analysis =
      ExecutableAnalysis::Create(source->executable().elf, options.executable.assume_go_layout);
  const std::string_view why = ProveSwitch(*analysis);
  const uint64_t bias =
      ComputeLoadBias(analysis->elf(), source->mappings(), source->executable().running);
  const RuntimeVariable& var = analysis->variables().mem_profile_rate;
  SamplingChange c{
      .pid = pid, .go_version = analysis->go_version(), .address = var.addr + bias, .write = {}};
  ProveWritable(analysis->elf(), var.addr, c.address, source->mappings());
  log(Concat(analysis->go_version(), ", load bias ", Hex(bias), ", ", kVariable, " at ",
             Hex(c.address), " (", var.source, ")"));
  log(Concat("the rate alone takes effect: ", why));
  ProcessWordWriter writer(pid);
  source->CheckSameProcess();
  c.write = WriteRate(source->memory(), writer, c.address, options.rate, log);
  return c;
}

std::string DescribeChange(const SamplingChange& c) {
  const RateWrite& w = c.write;
  if (w.writes == 0) {
    return Concat(kVariable, " is already ", w.old_rate, " in process ", c.pid,
                  ": nothing written");
  }
  if (w.new_rate == 0) {
    // The capture refuses while the rate is 0 (the state the runtime shows
    // then is "sampling off"); the buckets stay in the process.
    return Concat(kVariable, " ", w.old_rate, " -> 0 in process ", c.pid,
                  ": allocations from now on are not sampled, and a capture refuses while the "
                  "rate is 0; what was sampled stays in the process: turn sampling back on with "
                  "--rate ",
                  w.old_rate, " to capture it");
  }
  return Concat(kVariable, " ", w.old_rate, " -> ", w.new_rate, " in process ", c.pid,
                ": allocations from now on are sampled; allocations made before are not "
                "recoverable");
}

}  // namespace goheap2pprof
