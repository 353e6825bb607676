// Compiled with exactly the include roots of what links goheap2pprof_agent_node
// (tests/CMakeLists.txt): `goheap2pprof agent` sees its own part and every role below it,
// which it joins into one process; no role sees it (their own files say so).
#if !__has_include("agent/node/agent.h")
#error node does not see its own part
#endif
#if !__has_include("agent/serve/server.h") || !__has_include("agent/push/agent.h") || \
                                                             !__has_include("agent/watch/watch.h")
#error node does not see the roles it joins
#endif
#if !__has_include("agent/common/discovery.h") || !__has_include("agent/worker/pool.h")
#error node does not see agent/common or agent/worker
#endif
