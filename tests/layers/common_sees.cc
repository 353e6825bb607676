// Compiled with exactly the include roots of what links goheap2pprof_agent_common
// (tests/CMakeLists.txt): the lowest part of the agent sees itself and the engine's layers
// below app, and no other part. A failure here fails the build.
#if !__has_include("agent/common/discovery.h") || !__has_include("pprof/output.h")
#error agent/common does not see itself or the layers below app
#endif
#if __has_include("app/capture.h")
#error agent/common sees app: nothing in it captures (the worker probes and captures)
#endif
#if __has_include("agent/worker/pool.h") || __has_include("agent/serve/server.h")
#error agent/common sees a part above it
#endif
#if __has_include("agent/push/agent.h") || __has_include("agent/watch/watch.h")
#error agent/common sees a part above it
#endif
#if __has_include("agent/node/agent.h")
#error common sees the agent that joins the roles, a part above it
#endif
