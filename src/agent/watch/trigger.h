// The trigger state machine of `watch`, one per watched process: given what
// the counters say at a moment (a TriggerSample, with the time injected by
// the caller), it decides whether to capture now and why, and which triggers
// were skipped and why. Pure: no clock, no files, so it is unit tested with
// a fake clock.
//
//   TriggerMachine m(config, start);
//   m.Prime(first_sample);                  // after the baseline capture
//   for (const TriggerDecision& d : m.Evaluate(sample)) {
//     if (d.capture) Capture(d.reason); else Log(d.reason, d.skipped_because);
//   }
//
// Rules:
//  - each --above level (percent of the limit) fires once per upward
//    crossing and re-arms when usage falls below level - hysteresis points;
//    --rss-above levels the same, re-arming below level * (1 - hysteresis%);
//  - memory.events "max"/"oom" fire when their counter rises; PSI fires when
//    the kernel signalled the trigger;
//  - after a triggered capture, others are skipped for the cool-down, except
//    one escalation: a higher --above or --rss-above level than any fired in
//    this cool-down, or the first memory event in it;
//  - --every captures periodically, outside the cool-down rules;
//  - at most one capture per evaluation: triggers that fire together are
//    coalesced into the most severe one.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace goheap2pprof {

using WatchMillis = std::chrono::milliseconds;  // on a monotonic clock

struct TriggerConfig {
  std::vector<double> above_pct;    // percent of the limit, ascending
  std::vector<uint64_t> rss_above;  // bytes, ascending
  double hysteresis_pct = 5;
  bool working_set = false;  // ratio of usage - inactive_file (the caller computes it)
  bool on_max = false;
  bool on_oom = false;
  bool psi = false;
  std::optional<WatchMillis> every;
  WatchMillis cooldown{30000};
};

struct TriggerSample {
  WatchMillis now{0};
  std::optional<uint64_t> usage;  // what --above compares (usage or working set)
  std::optional<uint64_t> limit;
  std::optional<uint64_t> rss;
  std::optional<uint64_t> max_events;
  std::optional<uint64_t> oom_events;
  bool psi_fired = false;
};

struct TriggerDecision {
  // For file names and watch.jsonl: "above90", "rss-above-512MiB", "max",
  // "oom", "psi", "every".
  std::string reason;
  bool capture = false;
  bool escalation = false;      // captured inside a cool-down as a higher level
  std::string skipped_because;  // when !capture
};

class TriggerMachine {
 public:
  TriggerMachine(TriggerConfig config, WatchMillis start);

  // Takes the first sample without firing: levels already exceeded count as
  // crossed (the baseline capture shows that state), and event counters
  // start from their current values.
  void Prime(const TriggerSample& sample);
  // The triggers that fire at this sample, at most one of them with
  // capture = true.
  std::vector<TriggerDecision> Evaluate(const TriggerSample& sample);
  // When the next --every capture is due (for the caller's sleep).
  std::optional<WatchMillis> next_every() const { return next_every_; }

 private:
  enum class Kind { kOom, kMax, kAbove, kRss, kPsi };
  struct Fired {
    Kind kind;
    double level = 0;  // percent or bytes
    std::string reason;
  };
  // Whether a triggered capture is allowed now, and if so whether it is the
  // cool-down's escalation; fills why when not.
  bool Allowed(const Fired& f, WatchMillis now, bool& escalation, std::string& why) const;
  void Record(const Fired& f, WatchMillis now, bool escalation);
  std::optional<double> Ratio(const TriggerSample& s) const;
  // What s fires, most severe first; re-arms and spends the levels.
  std::vector<Fired> WhatFired(const TriggerSample& s);

  TriggerConfig config_;
  std::vector<bool> above_armed_;
  std::vector<bool> rss_armed_;
  std::optional<uint64_t> last_max_events_;
  std::optional<uint64_t> last_oom_events_;
  std::optional<WatchMillis> next_every_;
  // The current cool-down: when it began, the highest levels fired in it,
  // whether a memory event fired in it and whether its escalation was used.
  std::optional<WatchMillis> cooldown_start_;
  double cooldown_above_ = -1;
  double cooldown_rss_ = -1;
  bool cooldown_event_ = false;
  bool cooldown_escalated_ = false;
};

// "512MiB", "1.5GiB" (no ".0" on a whole number, as a size flag is written): for trigger
// reasons and messages.
std::string FormatSizeLikeAFlag(uint64_t bytes);
// "90", "92.5": a percent level without trailing zeros.
std::string FormatPercent(double pct);

}  // namespace goheap2pprof
