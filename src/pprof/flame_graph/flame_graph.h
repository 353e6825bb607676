// The flame graph view of a heap profile: one self-contained HTML page (an
// inline SVG drawn by an inline script, no network access) in which every
// frame is as wide as its share of one sample type, with the function and
// file:line on hover, click to zoom and a search that highlights matches and
// shows their share. Drawn top-down (the root on top), as go tool pprof's
// web view draws it.
//
// Computed from the same pb::Profile the pprof file holds:
//  - a frame is a function (with its file) at a position in the stack; the
//    lines it was seen at are listed on hover. Inline frames are frames of
//    their own, as the runtime's stack traces show them;
//  - siblings are ordered by value (largest first), then name, then file, so
//    the same profile always gives the same page, byte for byte;
//  - frames narrower than min_fraction of the total, and beyond the
//    max_frames widest, are merged: the siblings below the cut of one
//    parent become one "[N smaller frames]" frame, and their subtrees are
//    dropped. This bounds the page (at most 2 * max_frames + 1 frames)
//    whatever the profile's size.
// Every text from the profile (names, files, the title) comes from the
// target and is escaped for the context it lands in; the page's
// Content-Security-Policy allows only its own script (by hash), so text
// that escaped its escaping still could not run.
//
//   std::string html = FlameGraphHtml(profile, {.sample_index = "alloc_space"});
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "proto/profile.pb.h"

namespace goheap2pprof {

struct FlameGraphOptions {
  std::string sample_index = "inuse_space";  // a sample type of the profile
  // Frames narrower than this share of the total are merged (1e-4 is 0.12
  // pixels of a 1200-pixel graph).
  double min_fraction = 1e-4;
  size_t max_frames = 20000;  // frames kept before merging, besides the root
  std::string title = "";     // empty: the profile's executable and the sample type
  // Links to the profile's other sample types as "?sample_index=<type>", for
  // a page served by `goheap2pprof serve`.
  bool sample_type_links = false;
};

// One frame of the laid-out graph.
struct FlameFrame {
  int depth = 0;  // 0: the root (the whole profile)
  // Offset of the frame's left edge from the root's, and its width, in
  // sample units: a child starts where its left sibling ends, the first at
  // its parent's start.
  int64_t x = 0;
  int64_t value = 0;
  std::string name;
  std::string location;  // "file:line" (the lines it was seen at, widest first)
  bool inlined = false;  // every occurrence was inlined into its caller
  int64_t merged = 0;    // > 0: stands for this many smaller frames
};

struct FlameGraph {
  std::string title;
  std::string sample_type;
  std::string unit;                // the sample type's unit ("bytes", "count")
  std::vector<std::string> types;  // every sample type of the profile
  int64_t total = 0;               // sum of the positive sample values
  std::vector<FlameFrame> frames;  // pre-order; frames[0] is the root
  uint64_t skipped_samples = 0;    // samples with a negative value, left out
  uint64_t truncated_stacks = 0;   // stacks deeper than the bound, cut
  int64_t merged_frames = 0;       // frames merged away
};

// The laid-out graph; throws Error(kUsage) for an unknown sample index.
FlameGraph BuildFlameGraph(const pb::Profile& profile, const FlameGraphOptions& options);

// The page of a graph.
std::string FlameGraphPage(const FlameGraph& graph, const FlameGraphOptions& options);

inline std::string FlameGraphHtml(const pb::Profile& profile, const FlameGraphOptions& options) {
  return FlameGraphPage(BuildFlameGraph(profile, options), options);
}

// The Content-Security-Policy the page carries (in a meta element; a server
// should send it as a header too): nothing loads from anywhere, and only
// the page's own script and style run.
std::string FlameGraphContentSecurityPolicy();

// A Content-Security-Policy hash source for text, without the quotes:
// "sha256-<base64 of its SHA-256>" (OpenSSL's digest).
std::string CspSha256Source(std::string_view text);

// Text for an HTML element or a quoted attribute value.
std::string EscapeHtml(std::string_view text);
// JSON for a <script type="application/json"> element: no '<', '>' or '&'
// (written as \u003c...), so no "</script>" or "<!--" can end or change the
// element, and invalid UTF-8 replaced.
std::string JsonForScriptElement(const std::string& json_text);

}  // namespace goheap2pprof
