// The watch trigger state machine, driven by a fake clock: crossings,
// hysteresis, cool-down, escalation inside the cool-down, memory events,
// PSI, periodic captures and coalescing.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "agent/watch/trigger.h"

namespace goheap2pprof {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr uint64_t kLimit = 200ull << 20;

// A fake clock and a cgroup whose usage the test sets in percent.
class Driver {
 public:
  explicit Driver(TriggerConfig c) : machine_(std::move(c), now_) {}
  // Advance the clock, set usage to pct of the limit, evaluate; returns the
  // capture reason ("" if none) and keeps the skips.
  std::string At(milliseconds t, double pct) {
    now_ = t;
    TriggerSample s = Sample(pct);
    return Run(s);
  }
  TriggerSample Sample(double pct) const {
    TriggerSample s;
    s.now = now_;
    s.usage = static_cast<uint64_t>(pct / 100 * kLimit);
    s.limit = kLimit;
    return s;
  }
  std::string Run(const TriggerSample& s) {
    now_ = s.now;
    decisions_ = machine_.Evaluate(s);
    for (const TriggerDecision& d : decisions_) {
      if (d.capture) return d.reason + (d.escalation ? "!" : "");
    }
    return "";
  }
  const std::vector<TriggerDecision>& decisions() const { return decisions_; }
  TriggerMachine& machine() { return machine_; }
  milliseconds now_{0};

 private:
  TriggerMachine machine_;
  std::vector<TriggerDecision> decisions_;
};

TriggerConfig Above(std::vector<double> levels, milliseconds cooldown = milliseconds(0)) {
  TriggerConfig c;
  c.above_pct = std::move(levels);
  c.cooldown = cooldown;
  return c;
}

TEST(TriggerMachine, FiresOncePerUpwardCrossing) {
  Driver d(Above({70}));
  EXPECT_EQ(d.At(seconds(1), 50), "");
  EXPECT_EQ(d.At(seconds(2), 69.9), "");
  EXPECT_EQ(d.At(seconds(3), 70), "above70");
  EXPECT_EQ(d.At(seconds(4), 80), "");  // still above: no new crossing
  EXPECT_EQ(d.At(seconds(5), 99), "");
}

TEST(TriggerMachine, RearmsOnlyBelowTheHysteresis) {
  Driver d(Above({70}));
  EXPECT_EQ(d.At(seconds(1), 75), "above70");
  EXPECT_EQ(d.At(seconds(2), 66), "");  // within 5 points: still spent
  EXPECT_EQ(d.At(seconds(3), 72), "");
  EXPECT_EQ(d.At(seconds(4), 64.9), "");  // re-armed
  EXPECT_EQ(d.At(seconds(5), 71), "above70");
}

TEST(TriggerMachine, AJumpOverSeveralLevelsFiresTheHighestOnce) {
  Driver d(Above({70, 80, 90}));
  EXPECT_EQ(d.At(seconds(1), 85), "above80");
  EXPECT_EQ(d.At(seconds(2), 88), "");  // 70 and 80 spent
  EXPECT_EQ(d.At(seconds(3), 91), "above90");
}

TEST(TriggerMachine, PrimeTreatsLevelsAlreadyExceededAsCrossed) {
  Driver d(Above({70, 90}));
  d.machine().Prime(d.Sample(75));
  EXPECT_EQ(d.At(seconds(1), 78), "");
  EXPECT_EQ(d.At(seconds(2), 92), "above90");
}

TEST(TriggerMachine, CooldownSkipsAndSaysWhy) {
  Driver d(Above({70}, seconds(30)));
  EXPECT_EQ(d.At(seconds(1), 71), "above70");
  EXPECT_EQ(d.At(seconds(2), 50), "");  // re-arm
  EXPECT_EQ(d.At(seconds(10), 71), "");
  ASSERT_EQ(d.decisions().size(), 1u);
  EXPECT_EQ(d.decisions()[0].reason, "above70");
  EXPECT_FALSE(d.decisions()[0].capture);
  EXPECT_EQ(d.decisions()[0].skipped_because, "cool-down: 21000 ms left");
  // The crossing was spent while skipped; after the cool-down a new one fires.
  EXPECT_EQ(d.At(seconds(40), 50), "");
  EXPECT_EQ(d.At(seconds(41), 72), "above70");
}

TEST(TriggerMachine, OneHigherLevelEscalatesInsideTheCooldown) {
  Driver d(Above({70, 80, 90}, seconds(30)));
  EXPECT_EQ(d.At(seconds(1), 72), "above70");
  EXPECT_EQ(d.At(seconds(5), 81), "above80!");  // escalation
  EXPECT_EQ(d.At(seconds(6), 91), "");          // the one escalation is used
  ASSERT_EQ(d.decisions().size(), 1u);
  EXPECT_NE(d.decisions()[0].skipped_because.find("escalation was used"), std::string::npos);
  // The escalation does not extend the cool-down: it ends 30 s after the
  // first capture, and a new cool-down starts with the next capture.
  EXPECT_EQ(d.At(seconds(31), 50), "");
  EXPECT_EQ(d.At(seconds(32), 95), "above90");
  EXPECT_EQ(d.At(seconds(33), 50), "");
  EXPECT_EQ(d.At(seconds(34), 75), "");  // not higher than 90: no escalation
}

TEST(TriggerMachine, EqualLevelDoesNotEscalate) {
  Driver d(Above({70}, seconds(30)));
  EXPECT_EQ(d.At(seconds(1), 72), "above70");
  EXPECT_EQ(d.At(seconds(2), 10), "");
  EXPECT_EQ(d.At(seconds(3), 72), "");
}

TEST(TriggerMachine, MemoryEventsFireWhenTheirCounterRisesAndEscalateOnce) {
  TriggerConfig c = Above({70}, seconds(30));
  c.on_max = true;
  c.on_oom = true;
  Driver d(c);
  TriggerSample s = d.Sample(10);
  s.max_events = 5;
  s.oom_events = 0;
  d.machine().Prime(s);
  s.now = seconds(1);
  EXPECT_EQ(d.Run(s), "");  // unchanged counters
  s = d.Sample(75);
  s.now = seconds(2);
  s.max_events = 5;
  s.oom_events = 0;
  EXPECT_EQ(d.Run(s), "above70");
  s.now = seconds(3);
  s.max_events = 6;
  EXPECT_EQ(d.Run(s), "max!");  // first event in the cool-down
  s.now = seconds(4);
  s.oom_events = 1;
  EXPECT_EQ(d.Run(s), "");  // escalation used
  // oom and max together: one capture, the most severe reason, the other
  // coalesced.
  s.now = seconds(40);
  s.oom_events = 2;
  s.max_events = 7;
  EXPECT_EQ(d.Run(s), "oom");
  ASSERT_EQ(d.decisions().size(), 2u);
  EXPECT_EQ(d.decisions()[1].reason, "max");
  EXPECT_EQ(d.decisions()[1].skipped_because, "coalesced into the oom capture");
}

TEST(TriggerMachine, EventsAreIgnoredUnlessAsked) {
  Driver d(Above({70}));
  TriggerSample s = d.Sample(10);
  s.max_events = 1;
  s.oom_events = 1;
  d.machine().Prime(s);
  s.now = seconds(1);
  s.max_events = 2;
  s.oom_events = 2;
  EXPECT_EQ(d.Run(s), "");
}

TEST(TriggerMachine, RssLevelsWithHysteresis) {
  TriggerConfig c;
  c.rss_above = {100ull << 20, 50ull << 20};  // unsorted on purpose
  Driver d(c);
  TriggerSample s;
  s.rss = 40ull << 20;
  s.now = seconds(1);
  EXPECT_EQ(d.Run(s), "");
  s.now = seconds(2);
  s.rss = 60ull << 20;
  EXPECT_EQ(d.Run(s), "rss-above-50MiB");
  s.now = seconds(3);
  s.rss = 48ull << 20;  // above 95% of 50 MiB: still spent
  EXPECT_EQ(d.Run(s), "");
  s.now = seconds(4);
  s.rss = 51ull << 20;
  EXPECT_EQ(d.Run(s), "");
  s.now = seconds(5);
  s.rss = 47ull << 20;  // below 47.5 MiB: re-armed
  EXPECT_EQ(d.Run(s), "");
  s.now = seconds(6);
  s.rss = 200ull << 20;
  EXPECT_EQ(d.Run(s), "rss-above-100MiB!");  // a higher level, inside the 30 s cool-down
}

TEST(TriggerMachine, PsiFiresWhenSignalled) {
  TriggerConfig c;
  c.psi = true;
  c.cooldown = seconds(10);
  Driver d(c);
  TriggerSample s;
  s.now = seconds(1);
  EXPECT_EQ(d.Run(s), "");
  s.psi_fired = true;
  EXPECT_EQ(d.Run(s), "psi");
  s.now = seconds(2);
  EXPECT_EQ(d.Run(s), "");  // cool-down, and PSI never escalates
  s.now = seconds(12);
  EXPECT_EQ(d.Run(s), "psi");
}

TEST(TriggerMachine, EveryKeepsItsRhythmOutsideTheCooldown) {
  TriggerConfig c = Above({70}, seconds(10));
  c.every = seconds(5);
  Driver d(c);
  EXPECT_EQ(d.machine().next_every(), seconds(5));
  EXPECT_EQ(d.At(seconds(4), 10), "");
  EXPECT_EQ(d.At(seconds(5), 10), "every");
  EXPECT_EQ(d.machine().next_every(), seconds(10));
  EXPECT_EQ(d.At(seconds(9), 75), "above70");
  // Inside the above70 cool-down the period still captures...
  EXPECT_EQ(d.At(seconds(10), 75), "every");
  // ...and a missed period is not made up: next is 30 s, not 15, 20, 25.
  EXPECT_EQ(d.At(seconds(27), 75), "every");
  EXPECT_EQ(d.machine().next_every(), seconds(30));
  // A trigger and the period together: one capture.
  EXPECT_EQ(d.At(seconds(29), 10), "");
  EXPECT_EQ(d.At(seconds(30), 80), "above70");
  ASSERT_EQ(d.decisions().size(), 2u);
  EXPECT_EQ(d.decisions()[1].reason, "every");
  EXPECT_EQ(d.decisions()[1].skipped_because, "coalesced into the above70 capture");
}

TEST(TriggerMachine, NoLimitMeansNoAboveTrigger) {
  Driver d(Above({70}));
  TriggerSample s;
  s.now = seconds(1);
  s.usage = 1ull << 40;  // no limit known
  EXPECT_EQ(d.Run(s), "");
  EXPECT_TRUE(d.decisions().empty());
}

TEST(FormatSizeLikeAFlag, PowersOf1024) {
  EXPECT_EQ(FormatSizeLikeAFlag(512), "512B");
  EXPECT_EQ(FormatSizeLikeAFlag(100ull << 20), "100MiB");
  EXPECT_EQ(FormatSizeLikeAFlag(3ull << 29), "1.5GiB");
  EXPECT_EQ(FormatPercent(92.5), "92.5");
  EXPECT_EQ(FormatPercent(70), "70");
}

}  // namespace
}  // namespace goheap2pprof
