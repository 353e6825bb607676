// Compiled with exactly the include roots of what links goheap2pprof_agent_serve
// (tests/CMakeLists.txt): serve sees its own part and the parts below it, and neither
// push nor watch. A failure here fails the build, so the split of src/agent cannot
// erode unnoticed.
#if !__has_include("agent/serve/server.h")
#error serve does not see its own part
#endif
#if !__has_include("agent/common/discovery.h") || !__has_include("agent/worker/pool.h")
#error serve does not see agent/common or agent/worker
#endif
#if __has_include("agent/push/agent.h") || __has_include("agent/watch/watch.h")
#error serve sees another role: serve, push and watch stand side by side
#endif
#if __has_include("agent/node/agent.h")
#error serve sees the agent that joins the roles, a part above it
#endif
