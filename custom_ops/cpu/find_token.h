// Search for a token id in an int64 run: the inner loop of the n-gram scans
// (the newest token is compared first; candidates are rare). AVX-512, AVX2
// and portable versions; find_token_fn() returns the one for this CPU.
#pragma once

#include <cstdint>

namespace fastspec {

// First e in [from, to) with region[e] == value, or `to`.
using FindTokenFn = int64_t (*)(const int64_t* region, int64_t from, int64_t to, int64_t value);

// The version for this CPU and FASTSPEC_SIMD (fastspec/cpu_features.h),
// chosen on the first call. Fetch it once per scan, not per candidate.
FindTokenFn find_token_fn();

}  // namespace fastspec
