// goheap2pprof command line: parse it once and run the command it names, or
// the capture (cli/capture_main.h) when it names none; RunCommand turns the
// one error type into a message, a hint and the kind's exit code.
#include <CLI/CLI.hpp>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "cli/capture_main.h"
#include "cli/command.h"
#include "cli/version.h"
#if !GOHEAP2PPROF_CAPTURE_ONLY
#include "cli/agent_main.h"
#include "cli/capture_worker_main.h"
#include "cli/enable_sampling_main.h"
#include "cli/goroutines_main.h"
#include "cli/growth_main.h"
#include "cli/mem_main.h"
#include "cli/probe_main.h"
#include "cli/push_main.h"
#include "cli/serve_main.h"
#include "cli/watch_main.h"
#endif

namespace goheap2pprof {
namespace {

// The same table as "Exit codes" in the README.
constexpr const char* kExitCodes = R"(Exit codes:
  0   profile written (also when nothing was sampled yet: the profile is then empty, as the
      runtime would serve it, and a warning says so)
  1   unexpected failure (a bug; please report it)
  2   usage: bad arguments, a --core file that is not a core, or an --exe file that does not
      match the process or core (without --force)
  3   no such process: the pid does not exist, is a zombie, or exited or was reused during the
      capture
  4   permission denied: not allowed to inspect or read the target
  5   not a Go program (including kernel threads, and a qemu-user process with no Go guest it
      can read)
  6   unsupported target: Go older than 1.18, not a 64-bit little-endian amd64/arm64 ELF, a
      heap-bucket layout that differs from the table for its Go version (checked against
      DWARF), a Go newer than every tested one without DWARF to prove its layout (see
      --assume-go-layout), or a binary goheap2pprof cannot read without guessing (e.g. a
      stripped binary whose runtime variables cannot be recovered unambiguously, or
      qemu-user mapping several Go programs)
  7   heap sampling is disabled in the target (the linker compiled it out, or the program set
      runtime.MemProfileRate = 0)
  8   the target's memory, executable or core file is inconsistent (e.g. a truncated core)
  9   I/O error: writing the output, or reading the executable, /proc or the target's memory
  10  internal error (a bug; please report it))";

// The root's list of subcommands: one line each (a command's own --help
// has its whole description).
class RootFormatter : public CLI::Formatter {
 public:
  std::string make_subcommand(const CLI::App* sub) const override {
    static const std::map<std::string, std::string> kSummaries = {
        {"serve", "every Go process on this machine as a pprof endpoint (HTTP)"},
        {"push", "push every Go process's heap profile to Pyroscope and/or Parca"},
        {"watch", "capture heap profiles when memory runs short, before the OOM killer"},
        {"agent", "serve, push and watch at once: one discovery, one worker pool, one /metrics"},
        {"mem", "where a Go process's memory is, by the runtime's own classes"},
        {"growth", "which allocation sites grow, over N heap snapshots"},
        {"probe", "one GET of the agent's listener, for a Kubernetes exec probe"},
        {"enable-sampling",
         "turn heap sampling on in a Go program that does not sample (writes one word to it)"},
    };
    auto it = kSummaries.find(sub->get_name());
    std::ostringstream out;
    CLI::detail::format_help(out, sub->get_name(),
                             it != kSummaries.end() ? it->second : sub->get_description(),
                             column_width_);
    return out.str();
  }
};

// `goheap2pprof help [command]`: the --help of the root or of one command.
Command AddHelpCommand(CLI::App& root) {
  CLI::App* cmd = root.add_subcommand("help", "show the --help of goheap2pprof or of a command");
  auto name = std::make_shared<std::string>();
  cmd->add_option("command", *name, "the command");
  return {cmd, [&root, name] {
            if (name->empty()) {
              std::cout << root.help("", CLI::AppFormatMode::Normal);
              return 0;
            }
            const std::vector<CLI::App*> named =
                root.get_subcommands([&name](CLI::App* sub) { return sub->get_name() == *name; });
            CLI::App* sub = named.empty() ? nullptr : named.front();
            if (sub == nullptr || sub->get_group().empty()) {
              throw Error(ErrorKind::kUsage, "no command \"", *name, "\"");
            }
            std::cout << sub->help(root.get_name());
            return 0;
          }};
}

#if !GOHEAP2PPROF_CAPTURE_ONLY
// The names of the commands AllCommands adds (cli_test.sh names each on a
// command line without --help: a name missing here would be read as a pid).
constexpr std::string_view kCommandNames[] = {
    "serve",           "push",       "watch", "agent",           "mem", "growth", "probe",
    "enable-sampling", "goroutines", "help",  "__capture-worker"};

// Whether every command must be added to parse this command line: when an
// argument names one, or asks for help (the root's --help lists them all),
// or there is none. Any other command line can only be the capture's, and
// adding the others' options took 0.8 of the 0.9 ms that parsing it took: a
// cold capture's start-up (bench/README.md).
bool NeedsEveryCommand(int argc, char** argv) {
  if (argc <= 1) return true;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "-h" || arg == "--help") return true;
    for (std::string_view name : kCommandNames) {
      if (arg == name) return true;
    }
  }
  return false;
}

// Every command, in the order --help lists them (the worker is hidden).
std::vector<Command> AllCommands(CLI::App& app) {
  return {AddServeCommand(app),        AddPushCommand(app),
          AddWatchCommand(app),        AddAgentCommand(app),
          AddMemCommand(app),          AddGrowthCommand(app),
          AddProbeCommand(app),        AddEnableSamplingCommand(app),
          AddGoroutinesCommand(app),   AddHelpCommand(app),
          AddCaptureWorkerCommand(app)};
}
#endif

int Main(int argc, char** argv) {
  CLI::App app{
      "goheap2pprof: capture the heap profile of a running Go process from outside it, "
      "as a gzipped pprof profile.proto that means what its /debug/pprof/heap would serve.\n"
      "  goheap2pprof <pid> -o heap.pb.gz && go tool pprof -top heap.pb.gz\n"
      "  goheap2pprof --core core.1234 [--exe ./server] -o heap.pb.gz",
      "goheap2pprof"};
  app.footer(kExitCodes);
  const Command capture = AddCaptureCommand(app);
  app.set_version_flag("--version", &VersionText,
                       "print the version, the git commit and the versions of the libraries "
                       "linked in");
  app.formatter(std::make_shared<RootFormatter>());
  // One command per command line: after `help`, "serve" is its argument,
  // not a second command to run.
  app.require_subcommand(0, 1);
#if GOHEAP2PPROF_CAPTURE_ONLY
  // A build of the capture alone (GOHEAP2PPROF_AGENT=OFF: scripts/demo.sh).
  const std::vector<Command> commands = {AddHelpCommand(app)};
#else
  const std::vector<Command> commands =
      NeedsEveryCommand(argc, argv) ? AllCommands(app) : std::vector<Command>{};
#endif
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // Boundary: main's, for the command line. --help and --version end
    // parsing with success: CLI11 prints them.
    return e.get_exit_code() == 0 ? app.exit(e) : ReportParseError(app, e);
  }
  for (const Command& c : commands) {
    if (c.app->parsed()) {
      return RunCommand("goheap2pprof " + c.app->get_name(), c.run, c.on_failure);
    }
  }
  return RunCommand("goheap2pprof", capture.run, capture.on_failure);
}

}  // namespace
}  // namespace goheap2pprof

int main(int argc, char** argv) { return goheap2pprof::Main(argc, argv); }
