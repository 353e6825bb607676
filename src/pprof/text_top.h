// A terminal view of a heap profile: the table `go tool pprof -top` prints
// (flat, flat%, sum%, cum, cum%, name), computed from the finished profile
// with pprof's semantics so that both show the same rows in the same order
// with the same values:
//  - nodes are functions (pprof's default granularity); every inline frame
//    of a location is a node of its own;
//  - flat goes to the innermost frame of a sample's first location, cum to
//    every function on the stack once per sample (recursion counts once);
//  - nodes whose cum is below 0.5% of the total are dropped (-nodefraction),
//    the rest sorted by |flat| desc, name asc, |cum| desc and cut to the
//    node count (-nodecount);
//  - values are printed in the unit pprof chooses ("minimum": the unit of
//    the smallest value shown, unless that is 100x below the total).
// Sums saturate at the ends of the int64 range (pprof's Go code wraps), so
// corrupt sample values give a defined, visibly extreme table.
//
//   std::string text = TextTop(profile, {.sample_index = "inuse_space", .node_count = 10});
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "proto/profile.pb.h"

namespace goheap2pprof {

struct TextTopOptions {
  std::string sample_index = "inuse_space";  // a sample type of the profile
  int node_count = 10;                       // rows; 0 shows every node
  double node_fraction = 0.005;              // pprof's -nodefraction
};

struct TopRow {
  std::string name;
  int64_t flat = 0;
  int64_t cum = 0;
  std::string inline_label;  // "", "(inline)" or "(partial-inline)"
};

struct TopTable {
  std::vector<std::string> labels;  // the header lines above the table
  std::vector<TopRow> rows;
  int64_t total = 0;        // sum of |value| over all samples
  std::string sample_unit;  // the sample type's unit ("bytes", "count")
  std::string output_unit;  // the unit values are printed in
};

// The rows and labels of `go tool pprof -top`; throws Error(kUsage) for an
// unknown sample index.
TopTable ComputeTop(const pb::Profile& profile, const TextTopOptions& options);

// pprof's rendering of a value in a unit ("1.50MB", "0", "12").
std::string FormatPprofValue(int64_t value, const std::string& from_unit,
                             const std::string& to_unit);
// pprof's percentage column ("12.34%", "  100%", " 0.05%").
std::string FormatPprofPercentage(int64_t value, int64_t total);

// The whole text: labels, column header and rows, as pprof prints them.
std::string TextTop(const pb::Profile& profile, const TextTopOptions& options);

}  // namespace goheap2pprof
