// StreamBuckets in two stages on two cores (issue 42): the walk (reading the
// target, checking and decoding each bucket) on a thread of its own, the sink
// (a profile build) on the calling thread, the buckets handed over in
// batches through a few reused buffers, so the build of one batch overlaps
// the reads of the next and the memory held stays bounded.
//
//   WalkEnd end = StreamBucketsPipelined(mem, head, limits, warm, build);
//
// `ahead` runs on the walk's thread for each bucket before it is handed
// over: work that makes the sink's cheaper without changing what it does
// (symbolizing the stack's PCs, whose cache the sink then reads). The sink
// sees the same buckets in the same order as StreamBuckets gives them, each
// valid only during the call. Errors are StreamBuckets's, in the same order:
// the sink gets every bucket walked before the walk's error, and an error of
// the sink stops the walk and is the one thrown. Where no second thread or
// CPU can be had, this is StreamBuckets with `ahead` run before the sink.
#pragma once

#include <cstdint>

#include "heap/buckets.h"
#include "proc/memory_reader.h"

namespace goheap2pprof {

WalkEnd StreamBucketsPipelined(MemoryReader& mem, uint64_t head, const WalkLimits& limits,
                               const BucketSink& ahead, const BucketSink& sink);

}  // namespace goheap2pprof
