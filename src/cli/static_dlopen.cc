// The static executable loads no shared object. Linked with --wrap=dlopen
// (cmake/static.cmake), every dlopen() in the executable calls this instead:
// libdw.a's debuginfod client dlopen()s libdebuginfod.so when DEBUGINFOD_URLS
// is set, and a static glibc running a shared object built for another glibc
// is undefined behaviour. Refusing the load turns debuginfod off, which
// goheap2pprof does not need (it reads the target's own executable).
// In the dynamic build the wrapper is not wired in and this is never called.
extern "C" void* __wrap_dlopen(const char* /*file*/, int /*mode*/) { return nullptr; }
