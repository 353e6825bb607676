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
// (symbolizing the stack's PCs, whose cache the sink then reads). What it
// returns for a bucket, its note, is handed to the sink with the bucket
// (opaque here: a profile build's count of hidden leading frames). The sink
// sees the same buckets in the same order as StreamBuckets gives them, each
// valid only during the call. Errors are StreamBuckets's, in the same order:
// the sink gets every bucket walked before the walk's error, and an error of
// the sink stops the walk and is the one thrown. Where no second thread or
// CPU can be had, this is StreamBuckets with `ahead` run before the sink.
#pragma once

#include <cstdint>
#include <functional>

#include "heap/buckets.h"
#include "proc/memory_reader.h"

namespace goheap2pprof {

// What `ahead` says of a bucket, for the sink; kNoAheadNote where nothing
// ran ahead.
using AheadNote = uint32_t;
inline constexpr AheadNote kNoAheadNote = ~AheadNote{0};
using AheadStage = std::function<AheadNote(const Bucket& b)>;
using NotedBucketSink = std::function<void(const Bucket& b, AheadNote note)>;

WalkEnd StreamBucketsPipelined(MemoryReader& mem, uint64_t head, const WalkLimits& limits,
                               const AheadStage& ahead, const NotedBucketSink& sink);

}  // namespace goheap2pprof
