// Compiled with exactly the include roots of what links goheap2pprof_agent_push
// (tests/CMakeLists.txt): push sees its own part and the parts below it, and neither
// serve nor watch. A failure here fails the build, so the split of src/agent cannot
// erode unnoticed.
#if !__has_include("agent/push/agent.h")
#error push does not see its own part
#endif
#if !__has_include("agent/common/discovery.h") || !__has_include("agent/worker/pool.h")
#error push does not see agent/common or agent/worker
#endif
#if __has_include("agent/serve/server.h") || __has_include("agent/watch/watch.h")
#error push sees another role: serve, push and watch stand side by side
#endif
#if __has_include("agent/node/agent.h")
#error push sees the agent that joins the roles, a part above it
#endif
