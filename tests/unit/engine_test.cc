// The whole engine from memory to a profile: a hand-built Go executable
// (hand_go_elf.h) analysed once, runtime variables and buckets laid out in
// TestMemory at a PIE load bias, captured through Capture. No Go program is
// built. The expectations follow runtime/pprof's writeHeapProto
// (protomem.go) and runtime.MemProfile (mprof.go).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "app/capture.h"
#include "app/executable_analysis.h"
#include "app/memory_source.h"
#include "base/error.h"
#include "hand_go_elf.h"
#include "hand_pclntab.h"
#include "heap/buckets.h"
#include "proc/memory_reader.h"

namespace goheap2pprof {
namespace {

using testing_go_elf::BuildHandGoElf;
using testing_go_elf::HandGoElf;
using testing_pclntab::BuildGo120Table;
using testing_pclntab::HandFunc;
using testing_pclntab::HandTable;

constexpr uint64_t kEngineBias = 0x555555554000;
constexpr uint64_t kEngineHeap = 0xc000000000;
constexpr int64_t kRate = 512 * 1024;
constexpr uint64_t kExeInode = 77;
const char kExePath[] = "/srv/app";

// Three functions back to back from runtime.text (see hand_go_elf.h).
std::vector<HandFunc> Functions() {
  return {testing_go_elf::HandMallocgc(), testing_go_elf::HandAllocWithInlinedHelper(),
          testing_go_elf::HandMain()};
}

// One runtime.bucket (Go 1.18-1.26 layout: header, stack, memRecord of four
// memRecordCycles) as bytes.
std::vector<uint8_t> EngineBucketBytes(uint64_t size, const std::vector<uint64_t>& stack,
                                       const MemRecordCycle& active,
                                       const std::array<MemRecordCycle, 3>& future) {
  std::vector<uint64_t> words = {0, 0, kMemProfileBucketType, 0x1234, size, stack.size()};
  words.insert(words.end(), stack.begin(), stack.end());
  for (const MemRecordCycle* c : {&active, &future[0], &future[1], &future[2]}) {
    words.insert(words.end(), {c->allocs, c->frees, c->alloc_bytes, c->free_bytes});
  }
  std::vector<uint8_t> out(words.size() * 8);
  std::memcpy(out.data(), words.data(), out.size());
  return out;
}

struct TestBucket {
  uint64_t size;
  std::vector<uint64_t> stack;  // function index and offset, made runtime PCs below
  MemRecordCycle active;
  std::array<MemRecordCycle, 3> future = {};
};

// A Go executable and the state of one process running it.
class EngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    table_ = BuildGo120Table(Functions());
    elf_ = BuildHandGoElf(table_, "go1.26.2", 0x300, "runtime.mProfCycle");
    file_ = std::make_shared<const ElfFile>(ElfFile::FromBytes(elf_.image, kExePath));
  }

  // Runtime return PC of offset `off` in function `fn` of Functions().
  uint64_t Pc(uint64_t bias, int fn, uint64_t off) const {
    return bias + elf_.text + 0x100 * static_cast<uint64_t>(fn) + off;
  }

  // A source at load bias `bias` whose runtime holds `buckets` (linked in
  // this order from runtime.mbuckets), the rate and the cycle word. With
  // oldest_first the last bucket of the list comes first in memory, so that
  // buckets prepended to the list since an earlier source leave the others
  // where they were.
  std::unique_ptr<MemorySource> Source(uint64_t bias, const std::vector<TestBucket>& buckets,
                                       int64_t rate = kRate, uint32_t cycle_word = 4 << 1,
                                       uint8_t disable = 0, bool oldest_first = false) const {
    auto mem = std::make_unique<TestMemory>();
    std::vector<uint8_t> heap;
    std::vector<uint64_t> addrs(buckets.size());
    for (size_t k = 0; k < buckets.size(); ++k) {
      const size_t index = oldest_first ? buckets.size() - 1 - k : k;
      const TestBucket& b = buckets[index];
      addrs[index] = kEngineHeap + heap.size();
      std::vector<uint64_t> pcs;
      for (size_t i = 0; i + 1 < b.stack.size(); i += 2) {
        pcs.push_back(Pc(bias, static_cast<int>(b.stack[i]), b.stack[i + 1]));
      }
      std::vector<uint8_t> bytes = EngineBucketBytes(b.size, pcs, b.active, b.future);
      heap.insert(heap.end(), bytes.begin(), bytes.end());
    }
    for (size_t i = 0; i + 1 < addrs.size(); ++i) {  // allnext
      std::memcpy(&heap[addrs[i] - kEngineHeap + 8], &addrs[i + 1], 8);
    }
    heap.resize(std::max<size_t>(heap.size(), 0x1000));
    std::vector<uint8_t> image = elf_.image;
    image.resize((elf_.load_size + 0xfff) & ~uint64_t{0xfff});
    const uint64_t head = addrs.empty() ? 0 : addrs.front();
    std::memcpy(&image[elf_.mbuckets], &head, 8);
    std::memcpy(&image[elf_.mem_profile_rate], &rate, 8);
    std::memcpy(&image[elf_.cycle], &cycle_word, 4);
    image[elf_.disable_memory_profiling] = disable;
    const uint64_t image_size = image.size();
    mem->Map(bias, std::move(image));
    mem->Map(kEngineHeap, heap);
    std::vector<MapsEntry> maps = {
        {bias, bias + image_size, "r-xp", 0, "08:01", running_.inode, running_.path},
        {kEngineHeap, kEngineHeap + heap.size(), "rw-p", 0, "00:00", 0, ""},
    };
    TargetExecutable exe{file_, running_, "0badc0de", "", {}, {}};
    return std::make_unique<MemorySource>(std::move(mem), std::move(maps), std::move(exe),
                                          identity_);
  }

  HandTable table_;
  HandGoElf elf_;
  std::shared_ptr<const ElfFile> file_;
  // Who Source() says the process is, and the file it says it runs.
  ProcessIdentity identity_{4242, 99, "app"};
  FileIdentity running_{kExeInode, kExePath};
};

// Names of the functions of a location's lines, innermost first.
std::vector<std::string> LineFunctions(const pb::Profile& p, uint64_t location_id) {
  std::vector<std::string> out;
  for (const pb::Location& loc : p.location()) {
    if (loc.id() != location_id) continue;
    for (const pb::Line& line : loc.line()) {
      for (const pb::Function& f : p.function()) {
        if (f.id() == line.function_id()) {
          out.push_back(p.string_table(f.name()) + ":" + std::to_string(line.line()));
        }
      }
    }
  }
  return out;
}

const pb::Location* FindLocation(const pb::Profile& p, uint64_t id) {
  for (const pb::Location& loc : p.location()) {
    if (loc.id() == id) return &loc;
  }
  return nullptr;
}

std::pair<int64_t, int64_t> Scaled(int64_t count, int64_t bytes) {
  // scaleHeapSample, from runtime/pprof/protomem.go.
  const double scale = 1 / (1 - std::exp(-(double(bytes) / double(count)) / double(kRate)));
  return {static_cast<int64_t>(double(count) * scale), static_cast<int64_t>(double(bytes) * scale)};
}

TEST_F(EngineTest, CapturesAProfileFromTestMemory) {
  const auto analysis = ExecutableAnalysis::Create(file_);
  EXPECT_EQ(analysis->go_version(), "go1.26.2");
  // Newest first in the runtime's list: bucket 0 is the head.
  std::unique_ptr<MemorySource> src =
      Source(kEngineBias, {{.size = 64,
                            // mallocgc <- helper inlined in alloc (and the virtual PC the
                            // runtime records for alloc's frame: parent PC + 1) <- main
                            .stack = {0, 0x20, 1, 0x48, 1, 0x31, 2, 0x10},
                            .active = {10, 4, 640, 256},
                            .future = {{{}, {2, 0, 128, 0}, {}}}},
                           {.size = 1024, .stack = {2, 0x10}, .active = {1, 1, 1024, 1024}}});
  CaptureResult r = Capture(*src, *analysis, {.time_nanos = 12345});
  const pb::Profile& p = r.profile.get();

  EXPECT_EQ(r.report.go_version, "go1.26.2");
  EXPECT_EQ(r.report.buckets, 2u);
  EXPECT_EQ(r.report.samples, 2u);
  EXPECT_EQ(r.report.rate, kRate);
  EXPECT_EQ(r.report.cycle, 4u);
  EXPECT_TRUE(r.report.consistent);
  EXPECT_TRUE(r.report.warnings.empty());
  EXPECT_EQ(p.time_nanos(), 12345);
  EXPECT_EQ(p.period(), kRate);

  ASSERT_EQ(p.sample_size(), 2);
  // MemProfile adds the cycle being flushed (future[4 % 3]) to active.
  const pb::Sample& s0 = p.sample(0);
  const auto [alloc_n, alloc_b] = Scaled(12, 768);
  const auto [inuse_n, inuse_b] = Scaled(8, 512);
  EXPECT_EQ(s0.value(0), alloc_n);
  EXPECT_EQ(s0.value(1), alloc_b);
  EXPECT_EQ(s0.value(2), inuse_n);
  EXPECT_EQ(s0.value(3), inuse_b);
  ASSERT_EQ(s0.label_size(), 1);
  EXPECT_EQ(p.string_table(s0.label(0).key()), "bytes");
  EXPECT_EQ(s0.label(0).num(), 64);

  // runtime.mallocgc is hidden; the inlined helper expands into two lines
  // of one location at the runtime PC - 1.
  ASSERT_EQ(s0.location_id_size(), 2);
  EXPECT_EQ(LineFunctions(p, s0.location_id(0)),
            std::vector<std::string>({"main.helper:21", "main.alloc:11"}));
  EXPECT_EQ(FindLocation(p, s0.location_id(0))->address(), Pc(kEngineBias, 1, 0x48) - 1);
  EXPECT_EQ(LineFunctions(p, s0.location_id(1)), std::vector<std::string>({"main.main:31"}));
  // The second bucket's only PC is the first one's caller: the same location.
  const pb::Sample& s1 = p.sample(1);
  ASSERT_EQ(s1.location_id_size(), 1);
  EXPECT_EQ(s1.location_id(0), s0.location_id(1));
  EXPECT_EQ(s1.value(2), 0);
  EXPECT_EQ(s1.value(3), 0);

  // The executable's mapping, with the running file's build ID, has
  // functions because every lookup worked.
  ASSERT_EQ(p.mapping_size(), 1);
  EXPECT_EQ(p.mapping(0).memory_start(), kEngineBias);
  EXPECT_EQ(p.string_table(p.mapping(0).filename()), kExePath);
  EXPECT_EQ(p.string_table(p.mapping(0).build_id()), "0badc0de");
  EXPECT_TRUE(p.mapping(0).has_functions());
  for (const pb::Location& loc : p.location()) EXPECT_EQ(loc.mapping_id(), 1u);

  // -v notes say where the variables are at this bias.
  bool noted_bias = false;
  for (const std::string& note : r.report.notes) {
    noted_bias |= note.find("load bias " + Hex(kEngineBias)) != std::string::npos;
  }
  EXPECT_TRUE(noted_bias);
}

TEST_F(EngineTest, OneAnalysisServesProcessesAtOtherBiases) {
  const auto analysis = ExecutableAnalysis::Create(file_);
  const std::vector<TestBucket> buckets = {
      {.size = 32, .stack = {1, 0x48, 1, 0x31, 2, 0x10}, .active = {3, 1, 96, 32}}};
  CaptureResult first = Capture(*Source(kEngineBias, buckets), *analysis, {.time_nanos = 1});
  const uint64_t symbolized = analysis->symbolizer().distinct_pcs();
  constexpr uint64_t kOtherBias = 0x7f0000000000;
  CaptureResult second = Capture(*Source(kOtherBias, buckets), *analysis, {.time_nanos = 1});
  // The symbolizer's cache (link-time PCs) answered the second process.
  EXPECT_EQ(analysis->symbolizer().distinct_pcs(), symbolized);

  const pb::Profile& a = first.profile.get();
  const pb::Profile& b = second.profile.get();
  ASSERT_EQ(a.location_size(), b.location_size());
  for (int i = 0; i < a.location_size(); ++i) {
    EXPECT_EQ(b.location(i).address() - a.location(i).address(), kOtherBias - kEngineBias);
    EXPECT_EQ(LineFunctions(a, a.location(i).id()), LineFunctions(b, b.location(i).id()));
  }
  EXPECT_EQ(b.mapping(0).memory_start(), kOtherBias);
  EXPECT_EQ(a.sample(0).value(1), b.sample(0).value(1));
}

TEST_F(EngineTest, CapturesOnSeveralThreadsShareOneAnalysis) {
  // The agent captures many processes of one executable at once: the
  // analysis is shared, its symbolizer cache filled concurrently.
  const auto analysis = ExecutableAnalysis::Create(file_);
  const std::vector<TestBucket> buckets = {
      {.size = 64, .stack = {0, 0x20, 1, 0x48, 1, 0x31, 2, 0x10}, .active = {10, 4, 640, 256}},
      {.size = 32, .stack = {1, 0x10, 2, 0x10}, .active = {3, 0, 96, 0}},
      {.size = 1024, .stack = {2, 0x90}, .active = {1, 1, 1024, 1024}}};
  constexpr int kThreads = 4;
  std::vector<std::unique_ptr<MemorySource>> sources;
  for (int i = 0; i < kThreads; ++i)
    sources.push_back(Source(kEngineBias + 0x1000000 * i, buckets));
  std::vector<std::string> stacks(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      for (int round = 0; round < 20; ++round) {
        CaptureResult r = Capture(*sources[i], *analysis, {.time_nanos = 1});
        const pb::Profile& p = r.profile.get();
        std::string text;
        for (const pb::Sample& s : p.sample()) {
          for (uint64_t id : s.location_id()) {
            for (const std::string& line : LineFunctions(p, id)) text += line + " ";
          }
          text += "/ ";
        }
        stacks[i] = text;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(stacks[0],
            "main.helper:21 main.alloc:11 main.main:31 / main.alloc:11 main.main:31 / "
            "main.main:31 / ");
  for (int i = 1; i < kThreads; ++i) EXPECT_EQ(stacks[i], stacks[0]);
}

TEST_F(EngineTest, PublishedCountersLeaveTheUnpublishedCycleOut) {
  const auto analysis = ExecutableAnalysis::Create(file_);
  CaptureResult r = Capture(*Source(kEngineBias, {{.size = 64,
                                                   .stack = {2, 0x10},
                                                   .active = {10, 4, 640, 256},
                                                   .future = {{{}, {2, 0, 128, 0}, {}}}}}),
                            *analysis, {.counters = CounterSource::kPublished});
  const pb::Profile& p = r.profile.get();
  EXPECT_EQ(p.sample(0).value(0), Scaled(10, 640).first);
  ASSERT_EQ(p.comment_size(), 1);
  EXPECT_EQ(p.string_table(p.comment(0)), PublishedCountersComment());
}

TEST_F(EngineTest, RateZeroWithNoBucketsIsSamplingDisabled) {
  const auto analysis = ExecutableAnalysis::Create(file_);
  std::unique_ptr<MemorySource> src = Source(kEngineBias, {}, /*rate=*/0);
  CaptureReport report;
  try {
    Capture(*src, *analysis, {}, report);
    FAIL() << "captured a target whose sampling is off";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kSamplingDisabled);
    EXPECT_NE(std::string(e.what()).find("MemProfileRate = 0"), std::string::npos) << e.what();
  }
  // What was learned before the refusal is in the report.
  EXPECT_EQ(report.go_version, "go1.26.2");
  EXPECT_EQ(report.rate, 0);
}

TEST_F(EngineTest, CompiledOutProfilingIsSamplingDisabled) {
  // runtime.disableMemoryProfiling set and the rate still 0: the program
  // never turned sampling on, and only enable-sampling can now.
  const auto analysis = ExecutableAnalysis::Create(file_);
  std::unique_ptr<MemorySource> src = Source(
      kEngineBias, {{.size = 16, .stack = {2, 0x10}, .active = {1, 0, 16, 0}}}, /*rate=*/0, 4 << 1,
      /*disable=*/1);
  try {
    Capture(*src, *analysis, {});
    FAIL() << "captured a target whose profiling is compiled out";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kSamplingDisabled);
    EXPECT_NE(std::string(e.what()).find("compiled out"), std::string::npos) << e.what();
    EXPECT_NE(e.hint().find("goheap2pprof enable-sampling 4242"), std::string::npos) << e.hint();
  }
}

TEST_F(EngineTest, ARateTurnedOffByTheProgramIsSamplingDisabledInItsOwnWords) {
  // The linker left sampling on, the program (or GODEBUG) set the rate to 0
  // after a few samples: what they hold is not the heap now.
  const auto analysis = ExecutableAnalysis::Create(file_);
  std::unique_ptr<MemorySource> src =
      Source(kEngineBias, {{.size = 16, .stack = {2, 0x10}, .active = {1, 0, 16, 0}}}, /*rate=*/0);
  try {
    Capture(*src, *analysis, {});
    FAIL() << "captured a target whose sampling the program turned off";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kSamplingDisabled);
    const std::string what = e.what();
    EXPECT_NE(what.find("turned off in process 4242 by the program or GODEBUG"), std::string::npos)
        << what;
    EXPECT_EQ(what.find("compiled out"), std::string::npos) << what;
    EXPECT_NE(e.hint().find("enable-sampling 4242"), std::string::npos) << e.hint();
  }
}

TEST_F(EngineTest, SamplingTurnedOnAfterStartUpIsCapturedAndSaysSo) {
  // The file's initial runtime.MemProfileRate, as Go 1.20+ links it: the
  // rate of the buckets made during start-up, before schedinit zeroed it.
  std::memcpy(&elf_.image[elf_.mem_profile_rate], &kRate, 8);
  file_ = std::make_shared<const ElfFile>(ElfFile::FromBytes(elf_.image, kExePath));
  const auto analysis = ExecutableAnalysis::Create(file_);
  const std::vector<TestBucket> buckets = {
      {.size = 4096, .stack = {2, 0x10}, .active = {1000, 0, 4096000, 0}}};
  CaptureResult r = Capture(*Source(kEngineBias, buckets, /*rate=*/1, 4 << 1, /*disable=*/1),
                            *analysis, {.time_nanos = 1});
  const pb::Profile& p = r.profile.get();
  EXPECT_TRUE(r.report.sampling_started_late);
  ASSERT_EQ(p.sample_size(), 1);
  EXPECT_EQ(p.sample(0).value(3), 4096000);  // rate 1: unscaled
  ASSERT_EQ(r.report.mixed_rates.size(), 1u);
  EXPECT_NE(r.report.mixed_rates[0].find("sampled at 524288"), std::string::npos);
  EXPECT_NE(std::find(r.report.warnings.begin(), r.report.warnings.end(), r.report.mixed_rates[0]),
            r.report.warnings.end());
  std::vector<std::string> comments;
  for (int64_t c : p.comment()) comments.push_back(p.string_table(static_cast<int>(c)));
  EXPECT_EQ(comments,
            (std::vector<std::string>{SamplingStartedLateComment(),
                                      "goheap2pprof: warning: " + r.report.mixed_rates[0]}));
  EXPECT_NE(comments[0].find("sampling began after start-up"), std::string::npos);

  // At the start-up rate itself, nothing is mixed.
  r = Capture(*Source(kEngineBias, buckets, kRate, 4 << 1, /*disable=*/1), *analysis, {});
  EXPECT_TRUE(r.report.sampling_started_late);
  EXPECT_TRUE(r.report.mixed_rates.empty());
  // Nor is anything said of a program whose linker left sampling on.
  r = Capture(*Source(kEngineBias, buckets, /*rate=*/1), *analysis, {});
  EXPECT_FALSE(r.report.sampling_started_late);
  EXPECT_TRUE(r.report.mixed_rates.empty());
  EXPECT_EQ(r.profile.get().comment_size(), 0);
}

TEST_F(EngineTest, NothingSampledYetIsAnEmptyProfileWithAWarning) {
  const auto analysis = ExecutableAnalysis::Create(file_);
  CaptureResult r = Capture(*Source(kEngineBias, {}), *analysis, {});
  EXPECT_EQ(r.profile.get().sample_size(), 0);
  ASSERT_EQ(r.report.warnings.size(), 1u);
  EXPECT_NE(r.report.warnings[0].find("no heap allocation has been sampled yet"),
            std::string::npos);
}

// A source whose process went away (or whose pid was reused) by the end.
class GoneSource : public CaptureSource {
 public:
  explicit GoneSource(std::unique_ptr<CaptureSource> inner) : inner_(std::move(inner)) {}
  const ProcessIdentity& identity() const override { return inner_->identity(); }
  const std::vector<MapsEntry>& mappings() const override { return inner_->mappings(); }
  const TargetExecutable& executable() const override { return inner_->executable(); }
  std::vector<ProfileMapping> ProfileMappings() const override { return inner_->ProfileMappings(); }
  MemoryReader& memory() override { return inner_->memory(); }
  void CheckSameProcess() const override {
    throw Error(ErrorKind::kNoSuchProcess, "process 4242 exited during the capture");
  }

 private:
  std::unique_ptr<CaptureSource> inner_;
};

// The same memory as a core file: a snapshot, past turning anything on.
class CoreLikeSource : public GoneSource {
 public:
  using GoneSource::GoneSource;
  void CheckSameProcess() const override {}
  bool is_snapshot() const override { return true; }
};

TEST_F(EngineTest, ACoreWithSamplingOffIsNotOfferedEnableSampling) {
  const auto analysis = ExecutableAnalysis::Create(file_);
  const std::vector<TestBucket> buckets = {
      {.size = 16, .stack = {2, 0x10}, .active = {1, 0, 16, 0}}};
  for (uint8_t disable : {0, 1}) {
    CoreLikeSource core(Source(kEngineBias, buckets, /*rate=*/0, 4 << 1, disable));
    try {
      Capture(core, *analysis, {});
      FAIL() << "captured a core whose sampling is off";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kSamplingDisabled);
      EXPECT_EQ(e.hint().find("enable-sampling"), std::string::npos) << e.hint();
    }
  }
  // A core of a program that turned sampling on itself is read, and says so.
  CoreLikeSource late(Source(kEngineBias, buckets, /*rate=*/1, 4 << 1, /*disable=*/1));
  EXPECT_TRUE(Capture(late, *analysis, {}).report.sampling_started_late);
}

TEST_F(EngineTest, ATargetGoneByTheEndFailsTheCapture) {
  const auto analysis = ExecutableAnalysis::Create(file_);
  GoneSource src(Source(kEngineBias, {{.size = 16, .stack = {2, 0x10}, .active = {1, 0, 16, 0}}}));
  CaptureReport report;
  try {
    Capture(src, *analysis, {}, report);
    FAIL() << "a capture of a process that went away succeeded";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kNoSuchProcess);
  }
  EXPECT_EQ(report.buckets, 1u);
}

TEST_F(EngineTest, AnExecutableWithoutGoIsNotGo) {
  // The same image without build info, pclntab or runtime symbols: only the
  // ELF header and its first page survive.
  std::vector<uint8_t> image(elf_.image.begin(), elf_.image.begin() + 0x1000);
  Elf64_Ehdr eh;
  std::memcpy(&eh, image.data(), sizeof(eh));
  eh.e_shoff = 0;
  eh.e_shnum = 0;
  eh.e_shstrndx = 0;
  std::memcpy(image.data(), &eh, sizeof(eh));
  Elf64_Phdr ph;
  std::memcpy(&ph, image.data() + sizeof(eh), sizeof(ph));
  ph.p_filesz = ph.p_memsz = 0x1000;
  std::memcpy(image.data() + sizeof(eh), &ph, sizeof(ph));
  auto file = std::make_shared<const ElfFile>(ElfFile::FromBytes(image, "/bin/true"));
  try {
    ExecutableAnalysis::Create(file);
    FAIL() << "analysed a file without Go";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kNotGo) << e.what();
  }
}

TEST(ExecutableFileMappings, KeepsExecutableFileMappingsAsParseProcSelfMapsDoes) {
  const std::vector<MapsEntry> maps = {
      {0x1000, 0x2000, "r--p", 0, "08:01", 7, "/srv/app (deleted)"},
      {0x2000, 0x3000, "r-xp", 0x1000, "08:01", 7, "/srv/app (deleted)"},
      {0x4000, 0x5000, "r-xp", 0, "08:01", 9, "/lib/libc.so.6"},
      {0x6000, 0x7000, "r-xp", 0x2000, "08:01", 9, "/lib/libc.so.6"},
      {0x8000, 0x9000, "rw-p", 0, "00:00", 0, "[heap]"},
      {0xa000, 0xb000, "r-xp", 0, "00:00", 0, "[vdso]"},
  };
  int lookups = 0;
  const std::vector<ProfileMapping> m =
      ExecutableFileMappings(maps, {7, "/srv/app (deleted)"}, "exeid", [&](const MapsEntry& e) {
        ++lookups;
        return "id-of-" + e.path;
      });
  ASSERT_EQ(m.size(), 4u);
  EXPECT_EQ(m[0].file, "/srv/app");  // " (deleted)" removed
  EXPECT_EQ(m[0].build_id, "exeid");
  EXPECT_EQ(m[0].offset, 0x1000u);
  EXPECT_EQ(m[1].build_id, "id-of-/lib/libc.so.6");
  EXPECT_EQ(m[2].build_id, "id-of-/lib/libc.so.6");
  EXPECT_EQ(lookups, 1);           // each file is read once
  EXPECT_EQ(m[3].file, "[vdso]");  // kept, without a build ID
  EXPECT_EQ(m[3].build_id, "");
}

}  // namespace
}  // namespace goheap2pprof

namespace goheap2pprof {
namespace {

// The samples of a profile as comparable text: values, then the stack as
// function:line lists of its locations (ids and string indexes may differ
// between two builds of the same meaning).
std::vector<std::string> SampleTexts(const pb::Profile& p) {
  std::vector<std::string> out;
  for (const pb::Sample& s : p.sample()) {
    std::string text;
    for (int64_t v : s.value()) text += std::to_string(v) + " ";
    for (uint64_t id : s.location_id()) {
      for (const std::string& f : LineFunctions(p, id)) text += f + ",";
      text += "|";
    }
    for (const pb::Label& l : s.label()) {
      text += " " + p.string_table(l.key()) + "=" + std::to_string(l.num());
    }
    out.push_back(text);
  }
  return out;
}

class RepeatedCaptureTest : public EngineTest {
 protected:
  static constexpr uint64_t kEngineBias = 0x10000;
  std::vector<TestBucket> Buckets(uint64_t allocs) const {
    return {{64, {1, 0x10, 0, 0x20}, {allocs, 1, 64 * allocs, 64}},
            {128, {2, 0x10, 0, 0x20}, {3, 1, 384, 128}}};
  }
  // A capture through state, and what a fresh capture of the same memory
  // says. oldest_first: as Source's.
  std::pair<CaptureResult, std::vector<std::string>> CaptureBoth(
      const std::vector<TestBucket>& buckets, ProcessCaptureState& state,
      bool oldest_first = false) {
    std::unique_ptr<MemorySource> src =
        Source(kEngineBias, buckets, kRate, 4 << 1, 0, oldest_first);
    CaptureReport report;
    CaptureResult r = Capture(*src, analysis_, {}, report, state);
    std::unique_ptr<MemorySource> again =
        Source(kEngineBias, buckets, kRate, 4 << 1, 0, oldest_first);
    CaptureResult fresh = Capture(*again, *analysis_, {});
    return {std::move(r), SampleTexts(fresh.profile.get())};
  }
  // Captures `old` through a new state, then `old` with `added` at the head
  // of the list (laid out oldest first): the second capture must be a
  // repeated one that built its tables afresh and means what a fresh capture
  // does. Returns the fresh capture's sample texts.
  std::vector<std::string> ExpectBuiltAfresh(const std::vector<TestBucket>& old,
                                             const TestBucket& added) {
    ProcessCaptureState state;
    CaptureBoth(old, state, /*oldest_first=*/true);
    std::vector<TestBucket> now = old;
    now.insert(now.begin(), added);
    auto [r, fresh] = CaptureBoth(now, state, /*oldest_first=*/true);
    EXPECT_TRUE(r.report.repeated);
    EXPECT_EQ(r.report.tables, ProfileTablesOrigin::kBuilt);
    EXPECT_EQ(SampleTexts(r.profile.get()), fresh);
    return fresh;
  }
  void SetUp() override {
    EngineTest::SetUp();
    analysis_ = ExecutableAnalysis::Create(file_);
  }
  std::shared_ptr<const ExecutableAnalysis> analysis_;
};

TEST_F(RepeatedCaptureTest, ASecondCaptureReusesTheStateAndMeansTheSame) {
  ProcessCaptureState state;
  auto [first, fresh1] = CaptureBoth(Buckets(5), state);
  EXPECT_FALSE(first.report.repeated);
  EXPECT_EQ(state.fresh_reason(), "first capture");
  EXPECT_EQ(SampleTexts(first.profile.get()), fresh1);
  // Counters changed: the same buckets, other counts.
  auto [second, fresh2] = CaptureBoth(Buckets(9), state);
  EXPECT_TRUE(second.report.repeated);
  EXPECT_EQ(state.reused(), 1u);
  EXPECT_EQ(SampleTexts(second.profile.get()), fresh2);
  EXPECT_NE(fresh1, fresh2);
  EXPECT_EQ(second.profile.get().location_size(), first.profile.get().location_size());
}

TEST_F(RepeatedCaptureTest, ADebugTextCaptureLeavesTheStateAsItWas) {
  // on_records hands out the stacks, which a state does not keep: such a
  // capture reads afresh, and the state serves the next one as before.
  ProcessCaptureState state;
  CaptureBoth(Buckets(5), state);
  CaptureOptions options;
  size_t stack_words = 0;
  options.on_records = [&](std::span<const MemProfileRecord> records, int64_t, uint64_t) {
    for (const MemProfileRecord& rec : records) stack_words += rec.bucket->stack.size();
  };
  CaptureReport report;
  Capture(*Source(kEngineBias, Buckets(6)), analysis_, options, report, state);
  EXPECT_EQ(stack_words, 4u);  // two buckets of two PCs
  EXPECT_FALSE(report.repeated);
  auto [r, fresh] = CaptureBoth(Buckets(7), state);
  EXPECT_TRUE(r.report.repeated);
  EXPECT_EQ(r.report.tables, ProfileTablesOrigin::kReused);
  EXPECT_EQ(SampleTexts(r.profile.get()), fresh);
}

TEST_F(RepeatedCaptureTest, AProcessReplacedUnderTheSamePidStartsAfresh) {
  ProcessCaptureState state;
  CaptureBoth(Buckets(5), state);
  identity_.start_time = 100;  // the pid now names a process started later
  auto [r, fresh] = CaptureBoth(Buckets(7), state);
  EXPECT_FALSE(r.report.repeated);
  EXPECT_EQ(state.fresh_reason(), "start time changed (another process)");
  EXPECT_EQ(SampleTexts(r.profile.get()), fresh);
}

TEST_F(RepeatedCaptureTest, AnExecInPlaceStartsAfresh) {
  ProcessCaptureState state;
  CaptureBoth(Buckets(5), state);
  // Same pid and start time (exec keeps both), another executable file.
  running_ = {kExeInode + 1, kExePath};
  auto [r, fresh] = CaptureBoth(Buckets(7), state);
  EXPECT_FALSE(r.report.repeated);
  EXPECT_EQ(state.fresh_reason(), "executable changed");
  EXPECT_EQ(SampleTexts(r.profile.get()), fresh);
}

TEST_F(RepeatedCaptureTest, BucketsThatAreNoLongerTheRememberedOnesStartAfresh) {
  ProcessCaptureState state;
  CaptureBoth(Buckets(5), state);
  // Same identity, but another bucket where the first one was (an exec of
  // the same file could do this): its header and stack differ.
  std::vector<TestBucket> other = Buckets(5);
  other[0].stack = {3, 0x10, 0, 0x20};
  auto [r, fresh] = CaptureBoth(other, state);
  EXPECT_FALSE(r.report.repeated);
  EXPECT_EQ(SampleTexts(r.profile.get()), fresh);
  // And the state is usable again afterwards.
  auto [r2, fresh2] = CaptureBoth(other, state);
  EXPECT_TRUE(r2.report.repeated);
  EXPECT_EQ(SampleTexts(r2.profile.get()), fresh2);
}

// main.helper inlined in main.alloc, then main.alloc's own PC, then main.main:
// one inline group of two PCs and a location of its own.
const std::vector<uint64_t> kGroupStack = {1, 0x45, 1, 0x31, 2, 0x10};
// main.helper's PC alone before main.main: a location whose last frame is
// inlined, which kGroupStack's PCs would have extended.
const std::vector<uint64_t> kCutStack = {1, 0x45, 2, 0x10};
// Buckets laid out oldest first, as a list that grows at its head.
constexpr bool kGrown = true;

TEST_F(RepeatedCaptureTest, NewBucketsAtKnownStacksContinueTheTablesAndMeanTheSame) {
  ProcessCaptureState state;
  const std::vector<TestBucket> old = {{64, kGroupStack, {5, 1, 320, 64}},
                                       {128, {1, 0x10, 2, 0x10}, {3, 1, 384, 128}}};
  auto [first, fresh1] = CaptureBoth(old, state, kGrown);
  EXPECT_EQ(first.report.tables, ProfileTablesOrigin::kBuilt);
  EXPECT_EQ(SampleTexts(first.profile.get()), fresh1);
  // Go 1.27 keys buckets by object size too: a known call site allocating a
  // new size adds a bucket at the head of the list, with a known stack.
  std::vector<TestBucket> now = old;
  now.insert(now.begin(),
             {{256, {1, 0x10, 2, 0x10}, {2, 0, 512, 0}}, {512, kGroupStack, {1, 0, 512, 0}}});
  auto [second, fresh2] = CaptureBoth(now, state, kGrown);
  EXPECT_TRUE(second.report.repeated);
  EXPECT_EQ(second.report.tables, ProfileTablesOrigin::kContinued);
  EXPECT_EQ(SampleTexts(second.profile.get()), fresh2);
  EXPECT_EQ(second.profile.get().location_size(), first.profile.get().location_size());
  // And again on top of the continued tables, then with nothing added.
  now.insert(now.begin(), {1024, kGroupStack, {1, 0, 1024, 0}});
  auto [third, fresh3] = CaptureBoth(now, state, kGrown);
  EXPECT_EQ(third.report.tables, ProfileTablesOrigin::kContinued);
  EXPECT_EQ(SampleTexts(third.profile.get()), fresh3);
  auto [fourth, fresh4] = CaptureBoth(now, state, kGrown);
  EXPECT_EQ(fourth.report.tables, ProfileTablesOrigin::kReused);
  EXPECT_EQ(SampleTexts(fourth.profile.get()), fresh4);
}

TEST_F(RepeatedCaptureTest, NewStacksAreAddedToTheTablesAsTheRuntimeWouldMakeThem) {
  ProcessCaptureState state;
  const std::vector<TestBucket> old = {{64, {1, 0x10, 2, 0x10}, {5, 1, 320, 64}}};
  auto [first, fresh1] = CaptureBoth(old, state, kGrown);
  std::vector<TestBucket> now = old;
  now.insert(now.begin(), {{256, kGroupStack, {2, 0, 512, 0}},
                           {128, {1, 0x10, 2, 0x10}, {2, 0, 256, 0}},
                           {512, kGroupStack, {1, 0, 512, 0}}});
  auto [r, fresh] = CaptureBoth(now, state, kGrown);
  EXPECT_TRUE(r.report.repeated);
  EXPECT_EQ(r.report.tables, ProfileTablesOrigin::kContinued);
  EXPECT_EQ(SampleTexts(r.profile.get()), fresh);
  EXPECT_GT(r.profile.get().location_size(), first.profile.get().location_size());
  // The continued tables hold every string and function once.
  std::set<std::string> strings(r.profile.get().string_table().begin(),
                                r.profile.get().string_table().end());
  EXPECT_EQ(strings.size(), static_cast<size_t>(r.profile.get().string_table_size()));
  std::set<int64_t> names;
  for (const pb::Function& f : r.profile.get().function()) names.insert(f.name());
  EXPECT_EQ(names.size(), static_cast<size_t>(r.profile.get().function_size()));
  // Then a capture of the same buckets reuses the continued tables.
  auto [again, fresh_again] = CaptureBoth(now, state, kGrown);
  EXPECT_EQ(again.report.tables, ProfileTablesOrigin::kReused);
  EXPECT_EQ(SampleTexts(again.profile.get()), fresh_again);
}

TEST_F(RepeatedCaptureTest, ContinuingTakesOverTablesNoProfileHoldsAndCopiesHeldOnes) {
  ProcessCaptureState state;
  std::vector<TestBucket> now = {{64, kGroupStack, {5, 1, 320, 64}}};
  CaptureBoth(now, state, kGrown);  // its profile is gone: nothing else holds the tables
  const uint8_t* kept_chunk = state.profile_tables->locations->loc_chunks.front().data();
  now.insert(now.begin(), {128, kGroupStack, {2, 0, 256, 0}});
  auto [held, fresh] = CaptureBoth(now, state, kGrown);
  EXPECT_EQ(held.report.tables, ProfileTablesOrigin::kContinued);
  EXPECT_EQ(SampleTexts(held.profile.get()), fresh);
  // Taken over, not copied: the continued tables hold the same bytes.
  EXPECT_EQ(state.profile_tables->locations->loc_chunks.front().data(), kept_chunk);

  // `held` still holds the tables it was made from: the next continuation
  // copies them, and the profile is left as it was.
  const std::string held_bytes = held.profile.Serialize();
  now.insert(now.begin(), {256, kGroupStack, {1, 0, 256, 0}});
  auto [next, fresh_next] = CaptureBoth(now, state, kGrown);
  EXPECT_EQ(next.report.tables, ProfileTablesOrigin::kContinued);
  EXPECT_EQ(SampleTexts(next.profile.get()), fresh_next);
  EXPECT_NE(state.profile_tables->locations->loc_chunks.front().data(), kept_chunk);
  EXPECT_EQ(held.profile.Serialize(), held_bytes);
  EXPECT_EQ(held.profile.tables()->locations->loc_chunks.front().data(), kept_chunk);
}

TEST_F(RepeatedCaptureTest, TablesWhoseStacksDependOnTheirOrderAreBuiltAgain) {
  // In this order kCutStack makes a location of main.helper's PC alone and
  // kGroupStack uses it; with kGroupStack first, as the runtime builds once
  // a new bucket at it heads the list, the group is one location and
  // kCutStack's takes both of its PCs' places.
  const std::vector<TestBucket> old = {{64, kCutStack, {5, 1, 320, 64}},
                                       {128, kGroupStack, {3, 1, 384, 128}}};
  const std::vector<std::string> fresh = ExpectBuiltAfresh(old, {256, kGroupStack, {2, 0, 512, 0}});
  // The orders do mean different things here, so continuing would be wrong.
  // (kCutStack's bucket, same counters: first in the old order, second now.)
  ProcessCaptureState other;
  auto [old_order, unused] = CaptureBoth(old, other, kGrown);
  EXPECT_NE(SampleTexts(old_order.profile.get())[0], fresh[1]);
}

TEST_F(RepeatedCaptureTest, ANewStackThatWouldChangeTheOldOnesIsBuiltAfresh) {
  // Alone, kGroupStack's tables do not depend on any order; kCutStack, new,
  // meets its group's location with other PCs after main.helper's.
  ExpectBuiltAfresh({{128, kGroupStack, {3, 1, 384, 128}}}, {64, kCutStack, {5, 1, 320, 64}});
}

TEST_F(RepeatedCaptureTest, AStateKeepsNoStacks) {
  // The walk streams each stack into the build (issue 42): a state keeps
  // counters, record addresses and stack ends, then continues its tables
  // with the new buckets' stacks as they are read.
  ProcessCaptureState state;
  const std::vector<TestBucket> old = {{64, kGroupStack, {5, 1, 320, 64}},
                                       {128, {1, 0x10, 2, 0x10}, {3, 1, 384, 128}}};
  CaptureBoth(old, state, /*oldest_first=*/true);
  std::vector<TestBucket> now = old;
  now.insert(now.begin(), {256, {2, 0x10, 1, 0x45}, {2, 0, 512, 0}});
  auto [r, fresh] = CaptureBoth(now, state, /*oldest_first=*/true);
  EXPECT_EQ(r.report.tables, ProfileTablesOrigin::kContinued);
  EXPECT_EQ(SampleTexts(r.profile.get()), fresh);
  ASSERT_EQ(state.snapshot.buckets.size(), 3u);
  for (const Bucket& b : state.snapshot.buckets) EXPECT_TRUE(b.stack.empty());
  EXPECT_EQ(state.snapshot.stacks.words(), 0u);
  ASSERT_EQ(state.snapshot.ends.size(), 3u);
  EXPECT_EQ(state.snapshot.ends[0].words, 2u);  // PCs
}

TEST_F(RepeatedCaptureTest, ARateChangedSinceTheLastCaptureIsSaidToMixRates) {
  ProcessCaptureState state;
  CaptureReport first;
  Capture(*Source(kEngineBias, Buckets(5)), analysis_, {}, first, state);
  EXPECT_TRUE(first.mixed_rates.empty());
  // The program (or enable-sampling) set the rate to 1 since.
  for (int round = 0; round < 2; ++round) {
    CaptureReport report;
    CaptureResult r =
        Capture(*Source(kEngineBias, Buckets(6), /*rate=*/1), analysis_, {}, report, state);
    EXPECT_TRUE(r.report.repeated);
    // Still said at the next capture: the buckets sampled at 524288 remain.
    ASSERT_EQ(r.report.mixed_rates.size(), 1u) << round;
    EXPECT_NE(r.report.mixed_rates[0].find("an earlier capture of process 4242 read 524288"),
              std::string::npos)
        << r.report.mixed_rates[0];
    const pb::Profile& p = r.profile.get();
    ASSERT_EQ(p.comment_size(), 1);
    EXPECT_EQ(p.string_table(static_cast<int>(p.comment(0))),
              "goheap2pprof: warning: " + r.report.mixed_rates[0]);
  }
  // Another process under the state forgets it.
  identity_.start_time = 100;
  CaptureReport other;
  Capture(*Source(kEngineBias, Buckets(6), /*rate=*/1), analysis_, {}, other, state);
  EXPECT_TRUE(other.mixed_rates.empty());
}

TEST_F(RepeatedCaptureTest, AFailedCaptureLeavesNoStateToTrust) {
  ProcessCaptureState state;
  CaptureBoth(Buckets(5), state);
  std::unique_ptr<MemorySource> off = Source(kEngineBias, {}, /*rate=*/0);
  CaptureReport report;
  EXPECT_THROW(Capture(*off, analysis_, {}, report, state), Error);
  auto [r, fresh] = CaptureBoth(Buckets(6), state);
  EXPECT_FALSE(r.report.repeated);
  EXPECT_EQ(SampleTexts(r.profile.get()), fresh);
}

}  // namespace
}  // namespace goheap2pprof
