// The one flag group for a target: `pid`, --core, --exe, --force and
// --assume-go-layout, registered by every command that takes one (the
// capture, mem, growth, enable-sampling, watch, the hidden worker). Each
// command keeps its own set and help: a flag whose help is null is not
// registered, so a command that does not take --core still refuses it.
//
// The target's flags and the executable's are registered apart, so that
// each keeps its place in the command's --help.
//
//   auto t = std::make_shared<TargetFlags>();
//   const TargetFlagHelp help{.pid = "process id of the Go program", .core = "..."};
//   AddTargetFlags(app, *t, help);      // pid, --core
//   ...                                 // the command's own flags
//   AddExecutableFlags(app, *t, help);  // --exe, --force, --assume-go-layout
//   ... after parsing:
//   CheckTargetFlags(*t);
//   pid_t pid = TargetPid(*t);
#pragma once

#include <sys/types.h>

#include <CLI/CLI.hpp>
#include <string>

#include "app/process_source.h"

namespace goheap2pprof {

// Each flag's help for one command; null leaves the flag out.
struct TargetFlagHelp {
  const char* pid = nullptr;   // the positional pid (a command with other positionals has none)
  bool pid_required = false;   // CLI11 refuses a command line without it
  const char* core = nullptr;  // --core; it excludes the pid
  const char* exe = "as for a single capture";
  const char* force = "as for a single capture";
  const char* assume_layout = nullptr;  // --assume-go-layout
  // Whether --force without --exe (or --core) is a usage error; commands
  // that accepted it alone before keep accepting it.
  bool force_needs_exe = true;
};

// What the flags were given, and their options (null when not registered).
struct TargetFlags {
  std::string pid_text;
  std::string core;
  ExecutableOptions executable;
  std::string assume_layout;
  CLI::Option* pid_option = nullptr;
  CLI::Option* core_option = nullptr;
  CLI::Option* exe_option = nullptr;
  CLI::Option* force_option = nullptr;
  CLI::Option* assume_layout_option = nullptr;
  bool force_needs_exe = true;
};

// pid and --core.
void AddTargetFlags(CLI::App& app, TargetFlags& flags, const TargetFlagHelp& help);
// --exe, --force and --assume-go-layout.
void AddExecutableFlags(CLI::App& app, TargetFlags& flags, const TargetFlagHelp& help);

// After parsing: --force only with --exe (or --core, where the command
// takes it), and --assume-go-layout parsed into flags.executable. Throws
// Error(kUsage).
void CheckTargetFlags(TargetFlags& flags);

// The pid given, or Error(kUsage) "\"x\" is not a process id" (with
// `hint`, when not empty).
pid_t TargetPid(const TargetFlags& flags, const std::string& hint = "");

}  // namespace goheap2pprof
