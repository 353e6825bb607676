// The goroutines of a capture for people and scripts (goheap2pprof
// goroutines --format text|json): a top table of creation sites and states
// (wait reasons), with how long the oldest of each has waited, and a JSON
// document with the same table and every goroutine (id, state, minutes,
// labels, creator, frames). Symbolized as the debug=2 dump is
// (pprof/goroutine_dump.h).
//
//   std::string t = GoroutineTopText(in, snapshot);
//   std::string j = GoroutineJson(in, snapshot);
#pragma once

#include <optional>
#include <string>

#include "goroutine/goroutine_reader.h"
#include "pprof/goroutine_dump.h"

namespace goheap2pprof {

// g's creation site as the table names it: "main.main at main.go:12", or
// "(no creator shown)" for goroutine 1 and creators the dump hides.
std::string GoroutineCreatorText(const GoroutineDumpInput& in, const Goroutine& g);
std::string GoroutineCreatorText(const std::optional<GoroutineCreator>& c);

// Goroutines per creation site and state, most first.
std::string GoroutineTopText(const GoroutineDumpInput& in, const GoroutineSnapshot& snapshot);

// {"goroutines": N, "read": {...}, "sites": [...], "list": [...]}.
std::string GoroutineJson(const GoroutineDumpInput& in, const GoroutineSnapshot& snapshot);

}  // namespace goheap2pprof
