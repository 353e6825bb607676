// The flame graph view: the call tree and its layout arithmetic from
// hand-built profiles, the merging that bounds it, escaping of hostile
// names in every context of the page, and byte-for-byte determinism.
// (tests/e2e/flamegraph_test.sh renders the pages in headless Chromium.)
#include "pprof/flame_graph/flame_graph.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "base/error.h"

namespace goheap2pprof {
namespace {

// Heap profiles laid out as runtime/pprof writes them: sample values
// {alloc_objects, alloc_space, inuse_objects, inuse_space}; a location's
// lines innermost (inlined) first.
class Maker {
 public:
  Maker() {
    Str("");
    for (const char* t : {"alloc_objects", "alloc_space", "inuse_objects", "inuse_space"}) {
      pb::ValueType* vt = p_.add_sample_type();
      vt->set_type(Str(t));
      vt->set_unit(Str(std::string(t).find("space") != std::string::npos ? "bytes" : "count"));
    }
    pb::Mapping* m = p_.add_mapping();
    m->set_id(1);
    m->set_filename(Str("/srv/app"));
  }
  // (function, line) frames of one location, innermost first; files are
  // <function>.go unless given in `file`.
  uint64_t Loc(std::vector<std::pair<std::string, int>> frames, std::string file = "") {
    pb::Location* loc = p_.add_location();
    loc->set_id(p_.location_size());
    loc->set_mapping_id(1);
    loc->set_address(0x401000 + 0x10 * p_.location_size());
    for (const auto& [name, line] : frames) {
      pb::Line* l = loc->add_line();
      l->set_function_id(Func(name, file.empty() ? name + ".go" : file));
      l->set_line(line);
    }
    return loc->id();
  }
  uint64_t Unsymbolized(uint64_t address) {
    pb::Location* loc = p_.add_location();
    loc->set_id(p_.location_size());
    loc->set_mapping_id(1);
    loc->set_address(address);
    return loc->id();
  }
  // Leaf first; in-use bytes, with allocated = 2x in use.
  void Sample(std::vector<uint64_t> leaf_first, int64_t bytes) {
    pb::Sample* s = p_.add_sample();
    for (uint64_t id : leaf_first) s->add_location_id(id);
    for (int64_t v : {int64_t{1}, 2 * bytes, int64_t{1}, bytes}) s->add_value(v);
  }
  pb::Profile& profile() { return p_; }

 private:
  int64_t Str(const std::string& s) {
    for (int i = 0; i < p_.string_table_size(); ++i) {
      if (p_.string_table(i) == s) return i;
    }
    p_.add_string_table(s);
    return p_.string_table_size() - 1;
  }
  uint64_t Func(const std::string& name, const std::string& file) {
    for (const pb::Function& f : p_.function()) {
      if (p_.string_table(static_cast<int>(f.name())) == name) return f.id();
    }
    pb::Function* f = p_.add_function();
    f->set_id(p_.function_size());
    f->set_name(Str(name));
    f->set_system_name(Str(name));
    f->set_filename(Str(file));
    return f->id();
  }
  pb::Profile p_;
};

// The frames as "depth x value name" lines, for whole-graph comparisons.
std::vector<std::string> Lines(const FlameGraph& g) {
  std::vector<std::string> out;
  for (const FlameFrame& f : g.frames) {
    out.push_back(std::to_string(f.depth) + " " + std::to_string(f.x) + " " +
                  std::to_string(f.value) + " " + f.name);
  }
  return out;
}

// main.main -> {a (300 at a.go:10), b (100), b again via another line (50)};
// runtime.main on top of main.main.
Maker SmallFlameProfile() {
  Maker m;
  const uint64_t rt = m.Loc({{"runtime.main", 250}});
  const uint64_t main_a = m.Loc({{"main.main", 20}});
  const uint64_t main_b = m.Loc({{"main.main", 21}});
  const uint64_t a = m.Loc({{"main.a", 10}});
  const uint64_t b = m.Loc({{"main.b", 30}});
  const uint64_t b2 = m.Loc({{"main.b", 31}});
  m.Sample({a, main_a, rt}, 300);
  m.Sample({b, main_b, rt}, 100);
  m.Sample({b2, main_b, rt}, 50);
  return m;
}

TEST(FlameGraphTest, LayoutPlacesChildrenLeftToRightWidestFirst) {
  const FlameGraph g = BuildFlameGraph(SmallFlameProfile().profile(), {});
  EXPECT_EQ(g.total, 450);
  EXPECT_EQ(g.unit, "bytes");
  EXPECT_EQ(Lines(g),
            (std::vector<std::string>{"0 0 450 total", "1 0 450 runtime.main", "2 0 450 main.main",
                                      "3 0 300 main.a", "3 300 150 main.b"}));
  EXPECT_EQ(g.frames[2].location, "main.main.go:20, 21");  // 300 at line 20, 150 at 21
  EXPECT_EQ(g.frames[4].location, "main.b.go:30, 31");
  EXPECT_EQ(g.frames[3].location, "main.a.go:10");
  EXPECT_EQ(g.merged_frames, 0);
}

TEST(FlameGraphTest, SampleIndexChoosesTheValue) {
  const FlameGraph g =
      BuildFlameGraph(SmallFlameProfile().profile(), {.sample_index = "alloc_space"});
  EXPECT_EQ(g.total, 900);
  EXPECT_EQ(g.frames[3].value, 600);
  EXPECT_EQ(g.frames[4].x, 600);
  const FlameGraph objects =
      BuildFlameGraph(SmallFlameProfile().profile(), {.sample_index = "inuse_objects"});
  EXPECT_EQ(objects.total, 3);
  EXPECT_EQ(objects.unit, "count");
  EXPECT_THROW(BuildFlameGraph(SmallFlameProfile().profile(), {.sample_index = "cpu"}), Error);
}

TEST(FlameGraphTest, ChildrenNeverExceedTheirParentAndStartAtItsEdge) {
  Maker m;
  std::vector<uint64_t> locs;
  for (int i = 0; i < 40; ++i) locs.push_back(m.Loc({{"f" + std::to_string(i), i}}));
  // Stacks of varying shapes over the 40 functions.
  for (int s = 0; s < 200; ++s) {
    std::vector<uint64_t> stack;
    for (int d = 0; d < 1 + s % 7; ++d) stack.push_back(locs[(s * 7 + d * 13) % 40]);
    m.Sample(stack, 1 + (s * 37) % 101);
  }
  const FlameGraph g = BuildFlameGraph(m.profile(), {.min_fraction = 0});
  std::vector<size_t> parents;  // by depth
  std::vector<int64_t> next_x;  // where the next child of the frame at each depth starts
  for (size_t i = 0; i < g.frames.size(); ++i) {
    const FlameFrame& f = g.frames[i];
    parents.resize(f.depth + 1);
    next_x.resize(f.depth + 1);
    parents[f.depth] = i;
    next_x[f.depth] = f.x;
    if (f.depth == 0) continue;
    const FlameFrame& p = g.frames[parents[f.depth - 1]];
    EXPECT_EQ(f.x, next_x[f.depth - 1]) << f.name;
    next_x[f.depth - 1] += f.value;
    EXPECT_GE(f.x, p.x);
    EXPECT_LE(f.x + f.value, p.x + p.value) << f.name << " overflows " << p.name;
  }
  EXPECT_EQ(g.merged_frames, 0);
}

TEST(FlameGraphTest, InlineFramesAreFramesOfTheirOwn) {
  Maker m;
  // One location: main.leaf inlined into main.mid, which calls nothing
  // further inside; main.main is the caller.
  const uint64_t inl = m.Loc({{"main.leaf", 5}, {"main.mid", 9}});
  const uint64_t caller = m.Loc({{"main.main", 3}});
  m.Sample({inl, caller}, 64);
  const FlameGraph g = BuildFlameGraph(m.profile(), {});
  EXPECT_EQ(Lines(g), (std::vector<std::string>{"0 0 64 total", "1 0 64 main.main",
                                                "2 0 64 main.mid", "3 0 64 main.leaf"}));
  EXPECT_FALSE(g.frames[2].inlined);
  EXPECT_TRUE(g.frames[3].inlined);
}

TEST(FlameGraphTest, NarrowFramesAreMergedPerParent) {
  Maker m;
  const uint64_t root = m.Loc({{"main.main", 1}});
  const uint64_t big = m.Loc({{"main.big", 2}});
  m.Sample({big, root}, 10000);
  for (int i = 0; i < 5; ++i) {
    const uint64_t tiny = m.Loc({{"main.tiny" + std::to_string(i), 3}});
    const uint64_t below = m.Loc({{"main.below" + std::to_string(i), 4}});
    m.Sample({below, tiny, root}, 1);  // 1 / 10005 < 1e-3
  }
  const FlameGraph g = BuildFlameGraph(m.profile(), {.min_fraction = 1e-3});
  EXPECT_EQ(Lines(g),
            (std::vector<std::string>{"0 0 10005 total", "1 0 10005 main.main",
                                      "2 0 10000 main.big", "2 10000 5 [5 smaller frames]"}));
  EXPECT_EQ(g.frames[3].merged, 5);
  EXPECT_EQ(g.merged_frames, 5);
}

TEST(FlameGraphTest, MaxFramesBoundsTheGraph) {
  Maker m;
  const uint64_t root = m.Loc({{"main.main", 1}});
  for (int i = 0; i < 1000; ++i) {
    m.Sample({m.Loc({{"main.f" + std::to_string(i), 2}}), root}, 1000 + i);
  }
  const FlameGraph g = BuildFlameGraph(m.profile(), {.min_fraction = 0, .max_frames = 100});
  // main.main and the 99 widest functions, then one frame for the other 901.
  ASSERT_EQ(g.frames.size(), 1u + 100 + 1);
  EXPECT_EQ(g.frames[2].name, "main.f999");
  EXPECT_EQ(g.frames[100].name, "main.f901");
  EXPECT_EQ(g.frames[101].name, "[901 smaller frames]");
  EXPECT_EQ(g.frames[101].x + g.frames[101].value, g.total);
}

TEST(FlameGraphTest, NegativeZeroAndUnsymbolizedSamples) {
  Maker m;
  const uint64_t f = m.Loc({{"main.f", 1}});
  m.Sample({f}, 0);
  m.Sample({f}, -5);
  m.Sample({m.Unsymbolized(0x4abc00)}, 7);
  const FlameGraph g = BuildFlameGraph(m.profile(), {});
  EXPECT_EQ(g.total, 7);
  EXPECT_EQ(g.skipped_samples, 1u);
  EXPECT_EQ(Lines(g), (std::vector<std::string>{"0 0 7 total", "1 0 7 0x4abc00"}));
  EXPECT_EQ(g.frames[1].location, "/srv/app");
}

TEST(FlameGraphTest, DeepStacksAreCut) {
  Maker m;
  std::vector<uint64_t> stack(2000, m.Loc({{"main.rec", 1}}));
  m.Sample(stack, 8);
  const FlameGraph g = BuildFlameGraph(m.profile(), {});
  EXPECT_EQ(g.truncated_stacks, 1u);
  EXPECT_EQ(g.frames.size(), 1u + 1024);
  EXPECT_EQ(g.frames.back().value, 8);
}

TEST(FlameGraphTest, SamePageForTheSameProfile) {
  Maker a = SmallFlameProfile();
  const std::string page = FlameGraphHtml(a.profile(), {});
  EXPECT_EQ(page, FlameGraphHtml(SmallFlameProfile().profile(), {}));
  // Samples in another order give the same page too.
  Maker b = SmallFlameProfile();
  std::swap(*b.profile().mutable_sample(0), *b.profile().mutable_sample(2));
  EXPECT_EQ(page, FlameGraphHtml(b.profile(), {}));
}

TEST(FlameGraphTest, PageCarriesTheGraphAsJson) {
  const std::string page = FlameGraphHtml(SmallFlameProfile().profile(), {.title = "demo"});
  const std::string open = "<script type=\"application/json\" id=\"flame-data\">";
  const size_t begin = page.find(open);
  ASSERT_NE(begin, std::string::npos);
  const size_t end = page.find("</script>", begin);
  const nlohmann::json data =
      nlohmann::json::parse(page.substr(begin + open.size(), end - begin - open.size()));
  EXPECT_EQ(data["total"], 450);
  EXPECT_EQ(data["type"], "inuse_space");
  EXPECT_EQ(data["frames"].size(), 5u * 6);
  EXPECT_EQ(data["names"][data["frames"][3 * 6 + 3].get<int>()], "main.a");
  EXPECT_NE(page.find("<title>demo</title>"), std::string::npos);
}

// Names a target could carry (a hand-made profile; Go's own names are
// tamer), each aimed at one context of the page.
const std::vector<std::string>& HostileNames() {
  static const std::vector<std::string> names = {
      "</script><script>alert(1)</script>",
      "\"]]>&amp;<!--",
      "<img src=x onerror=alert(2)>",
      "'\"><svg onload=alert(3)>",
      "\u2028\u2029</SCRIPT >",
  };
  return names;
}

Maker HostileProfile() {
  Maker m;
  const uint64_t root = m.Loc({{"main.main", 1}}, "<b>\"]]>&.go");
  int64_t bytes = 1000;
  for (const std::string& name : HostileNames()) {
    m.Sample({m.Loc({{name, 7}}, "</script>.go"), root}, bytes);
    bytes -= 100;
  }
  // An invalid UTF-8 name.
  m.Sample({m.Loc({{"main.\xff\xfe", 8}}), root}, 10);
  return m;
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(FlameGraphTest, HostileNamesCannotLeaveTheirContext) {
  Maker m = HostileProfile();
  const std::string page = FlameGraphHtml(
      m.profile(), {.title = "</title><script>alert(4)</script>", .sample_type_links = true});
  // Only the page's own two script elements open and close.
  EXPECT_EQ(Count(page, "<script"), 2u);
  EXPECT_EQ(Count(page, "</script"), 2u);
  EXPECT_EQ(Count(page, "<!--"), 0u);
  EXPECT_EQ(Count(page, "<img"), 0u);
  EXPECT_EQ(Count(page, "<svg"), 1u);
  EXPECT_EQ(Count(page, "</title>"), 1u);
  EXPECT_NE(page.find("<title>&lt;/title&gt;&lt;script&gt;alert(4)&lt;/script&gt;</title>"),
            std::string::npos);
  // The data still holds every name exactly, once parsed.
  const std::string open = "id=\"flame-data\">";
  const size_t begin = page.find(open) + open.size();
  const nlohmann::json data =
      nlohmann::json::parse(page.substr(begin, page.find("</script>", begin) - begin));
  std::vector<std::string> names = data["names"];
  for (const std::string& name : HostileNames()) {
    EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;
  }
  EXPECT_NE(std::find(names.begin(), names.end(), "main.\uFFFD\uFFFD"), names.end());
  std::vector<std::string> locations = data["locations"];
  EXPECT_NE(std::find(locations.begin(), locations.end(), "</script>.go:7"), locations.end());
  // For tests/e2e/flamegraph_test.sh, which renders this page in Chromium.
  if (const char* out = std::getenv("GOHEAP2PPROF_FLAMEGRAPH_HOSTILE_PAGE")) {
    std::ofstream(out) << page;
  }
}

TEST(FlameGraphTest, EscapingPerContext) {
  EXPECT_EQ(EscapeHtml("<a href=\"x\">'&'</a>"),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
  EXPECT_EQ(JsonForScriptElement("[\"</script>&\"]"), "[\"\\u003c/script\\u003e\\u0026\"]");
  EXPECT_EQ(nlohmann::json::parse(JsonForScriptElement("[\"</script>&\"]"))[0], "</script>&");
}

TEST(FlameGraphTest, PolicyNamesTheScriptByItsHash) {
  const std::string page = FlameGraphHtml(SmallFlameProfile().profile(), {});
  const std::string policy = FlameGraphContentSecurityPolicy();
  EXPECT_EQ(policy.rfind("default-src 'none'; script-src 'sha256-", 0), 0u) << policy;
  const size_t begin = page.rfind("<script>") + 8;
  const std::string script = page.substr(begin, page.rfind("</script>") - begin);
  EXPECT_NE(policy.find("'" + CspSha256Source(script) + "'"), std::string::npos);
}

TEST(FlameGraphTest, CspHashSourceIsTheBase64OfSha256) {
  // FIPS 180-4 examples and the empty message.
  EXPECT_EQ(CspSha256Source("abc"), "sha256-ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0=");
  EXPECT_EQ(CspSha256Source(""), "sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=");
  EXPECT_EQ(CspSha256Source("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "sha256-JI1qYdIGOLjlwCaTDD5gOaM85Flk/yFn9uzt1BnbBsE=");
  EXPECT_EQ(CspSha256Source(std::string(1000000, 'a')),
            "sha256-zcduXJkU+5KBocfihNc+Z/GAmkiklyAOBG05zMcRLNA=");
}

}  // namespace
}  // namespace goheap2pprof
