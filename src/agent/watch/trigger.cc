#include "agent/watch/trigger.h"

#include <algorithm>
#include <cstdio>
#include <utility>

namespace goheap2pprof {

std::string FormatSizeLikeAFlag(uint64_t bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  double value = static_cast<double>(bytes);
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  char buf[32];
  if (value == static_cast<double>(static_cast<uint64_t>(value))) {
    std::snprintf(buf, sizeof(buf), "%llu%s", static_cast<unsigned long long>(value), kUnits[unit]);
  } else {
    std::snprintf(buf, sizeof(buf), "%.1f%s", value, kUnits[unit]);
  }
  return buf;
}

std::string FormatPercent(double pct) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", pct);
  return buf;
}

TriggerMachine::TriggerMachine(TriggerConfig config, WatchMillis start)
    : config_(std::move(config)) {
  std::sort(config_.above_pct.begin(), config_.above_pct.end());
  std::sort(config_.rss_above.begin(), config_.rss_above.end());
  above_armed_.assign(config_.above_pct.size(), true);
  rss_armed_.assign(config_.rss_above.size(), true);
  if (config_.every) next_every_ = start + *config_.every;
}

std::optional<double> TriggerMachine::Ratio(const TriggerSample& s) const {
  if (!s.usage || !s.limit || *s.limit == 0) return std::nullopt;
  return 100.0 * static_cast<double>(*s.usage) / static_cast<double>(*s.limit);
}

void TriggerMachine::Prime(const TriggerSample& s) {
  if (std::optional<double> ratio = Ratio(s)) {
    for (size_t i = 0; i < config_.above_pct.size(); ++i) {
      if (*ratio >= config_.above_pct[i]) above_armed_[i] = false;
    }
  }
  if (s.rss) {
    for (size_t i = 0; i < config_.rss_above.size(); ++i) {
      if (*s.rss >= config_.rss_above[i]) rss_armed_[i] = false;
    }
  }
  last_max_events_ = s.max_events;
  last_oom_events_ = s.oom_events;
}

bool TriggerMachine::Allowed(const Fired& f, WatchMillis now, bool& escalation,
                             std::string& why) const {
  escalation = false;
  if (!cooldown_start_ || now >= *cooldown_start_ + config_.cooldown) return true;
  const auto left =
      std::chrono::duration_cast<WatchMillis>(*cooldown_start_ + config_.cooldown - now);
  bool higher = false;
  switch (f.kind) {
    case Kind::kAbove:
      higher = f.level > cooldown_above_;
      break;
    case Kind::kRss:
      higher = f.level > cooldown_rss_;
      break;
    case Kind::kOom:
    case Kind::kMax:
      higher = !cooldown_event_;
      break;
    case Kind::kPsi:
      higher = false;
      break;
  }
  if (higher && !cooldown_escalated_) {
    escalation = true;
    return true;
  }
  why = "cool-down: " + std::to_string(left.count()) + " ms left";
  if (higher) why += ", and its one escalation was used";
  return false;
}

void TriggerMachine::Record(const Fired& f, WatchMillis now, bool escalation) {
  if (!escalation) {
    cooldown_start_ = now;
    cooldown_above_ = -1;
    cooldown_rss_ = -1;
    cooldown_event_ = false;
    cooldown_escalated_ = false;
  } else {
    cooldown_escalated_ = true;
  }
  if (f.kind == Kind::kAbove) cooldown_above_ = std::max(cooldown_above_, f.level);
  if (f.kind == Kind::kRss) cooldown_rss_ = std::max(cooldown_rss_, f.level);
  if (f.kind == Kind::kOom || f.kind == Kind::kMax) cooldown_event_ = true;
}

std::vector<TriggerMachine::Fired> TriggerMachine::WhatFired(const TriggerSample& s) {
  // Most severe first: an OOM is happening, the cgroup is at its limit, then
  // the highest level crossed, then stalls.
  std::vector<Fired> fired;
  auto rose = [](std::optional<uint64_t>& last, std::optional<uint64_t> now) {
    bool up = last && now && *now > *last;
    if (now) last = now;
    return up;
  };
  if (rose(last_oom_events_, s.oom_events) && config_.on_oom) {
    fired.push_back({Kind::kOom, 0, "oom"});
  }
  if (rose(last_max_events_, s.max_events) && config_.on_max) {
    fired.push_back({Kind::kMax, 0, "max"});
  }
  if (std::optional<double> ratio = Ratio(s)) {
    // Re-arm below the hysteresis band; fire the highest newly crossed
    // level (the lower ones crossed with it are spent too).
    std::optional<size_t> top;
    for (size_t i = 0; i < config_.above_pct.size(); ++i) {
      if (*ratio < config_.above_pct[i] - config_.hysteresis_pct) above_armed_[i] = true;
      if (*ratio >= config_.above_pct[i] && above_armed_[i]) {
        above_armed_[i] = false;
        top = i;
      }
    }
    if (top) {
      fired.push_back({Kind::kAbove, config_.above_pct[*top],
                       "above" + FormatPercent(config_.above_pct[*top])});
    }
  }
  if (s.rss) {
    std::optional<size_t> top;
    for (size_t i = 0; i < config_.rss_above.size(); ++i) {
      const double level = static_cast<double>(config_.rss_above[i]);
      if (static_cast<double>(*s.rss) < level * (1 - config_.hysteresis_pct / 100)) {
        rss_armed_[i] = true;
      }
      if (*s.rss >= config_.rss_above[i] && rss_armed_[i]) {
        rss_armed_[i] = false;
        top = i;
      }
    }
    if (top) {
      fired.push_back({Kind::kRss, static_cast<double>(config_.rss_above[*top]),
                       "rss-above-" + FormatSizeLikeAFlag(config_.rss_above[*top])});
    }
  }
  if (s.psi_fired && config_.psi) fired.push_back({Kind::kPsi, 0, "psi"});
  return fired;
}

std::vector<TriggerDecision> TriggerMachine::Evaluate(const TriggerSample& s) {
  const std::vector<Fired> fired = WhatFired(s);
  std::vector<TriggerDecision> out;
  bool captured = false;
  std::string captured_reason;
  for (const Fired& f : fired) {
    TriggerDecision d;
    d.reason = f.reason;
    if (captured) {
      d.skipped_because = "coalesced into the " + captured_reason + " capture";
    } else if (Allowed(f, s.now, d.escalation, d.skipped_because)) {
      d.capture = captured = true;
      captured_reason = f.reason;
      Record(f, s.now, d.escalation);
    }
    out.push_back(std::move(d));
  }
  // Periodic snapshots keep their own rhythm; a missed period is not made up.
  if (next_every_ && s.now >= *next_every_) {
    TriggerDecision d;
    d.reason = "every";
    if (captured) {
      d.skipped_because = "coalesced into the " + captured_reason + " capture";
    } else {
      d.capture = captured = true;
    }
    while (*next_every_ <= s.now) *next_every_ += *config_.every;
    out.push_back(std::move(d));
  }
  // The capture first, so callers and logs read naturally.
  std::stable_partition(out.begin(), out.end(), [](const TriggerDecision& d) { return d.capture; });
  return out;
}

}  // namespace goheap2pprof
