#include "gobin/capstone_library.h"

#include <optional>
#include <string>

#include "base/error.h"
#include "base/expected.h"

#ifdef GOHEAP2PPROF_CAPSTONE_DLOPEN
#include "base/shared_library.h"
#endif

namespace goheap2pprof {

#ifdef GOHEAP2PPROF_CAPSTONE_DLOPEN

Expected<CapstoneLibrary> TryLoadCapstoneLibrary(const char* soname) {
  Expected<SharedLibrary> lib = SharedLibrary::Open(
      soname, "reading a stripped Go binary's code", "Capstone",
      "install Capstone 4 (Debian: apt-get install libcapstone4), or use the static build");
  if (!lib) return lib.error();
  CapstoneLibrary c{};
  lib->Resolve("cs_open", c.open);
  lib->Resolve("cs_option", c.option);
  lib->Resolve("cs_close", c.close);
  lib->Resolve("cs_strerror", c.strerror);
  lib->Resolve("cs_malloc", c.malloc);
  lib->Resolve("cs_free", c.free);
  lib->Resolve("cs_disasm_iter", c.disasm_iter);
  lib->Resolve("cs_reg_name", c.reg_name);
  lib->Resolve("cs_version", c.version);
  if (std::optional<Error> missing = lib->Missing("the Capstone goheap2pprof was built for")) {
    return *missing;
  }
  return c;
}

namespace {

// The library, or the Error loading it gave; loaded once.
const Expected<CapstoneLibrary>& Load() {
  static const Expected<CapstoneLibrary> loaded = TryLoadCapstoneLibrary("libcapstone.so.4");
  return loaded;
}

}  // namespace

const CapstoneLibrary& Capstone() { return Load().value(); }

const CapstoneLibrary* TryCapstone(std::string* why) { return LoadedOrWhy(Load(), why); }

#else  // linked in

const CapstoneLibrary& Capstone() {
  static const CapstoneLibrary kLinked{
      .open = &cs_open,
      .option = &cs_option,
      .close = &cs_close,
      .strerror = &cs_strerror,
      .malloc = &cs_malloc,
      .free = &cs_free,
      .disasm_iter = &cs_disasm_iter,
      .reg_name = &cs_reg_name,
      .version = &cs_version,
  };
  return kLinked;
}

const CapstoneLibrary* TryCapstone(std::string* /*why*/) { return &Capstone(); }

#endif

}  // namespace goheap2pprof
