// Compiled with exactly the include roots of what links goheap2pprof_agent_worker
// (tests/CMakeLists.txt): the worker sees agent/common and itself, and none of the roles
// that use it. A failure here fails the build.
#if !__has_include("agent/worker/pool.h") || !__has_include("agent/common/discovery.h")
#error agent/worker does not see itself or agent/common
#endif
#if __has_include("agent/serve/server.h") || __has_include("agent/push/agent.h")
#error agent/worker sees a role above it
#endif
#if __has_include("agent/watch/watch.h")
#error agent/worker sees a role above it
#endif
#if __has_include("agent/node/agent.h")
#error worker sees the agent that joins the roles, a part above it
#endif
