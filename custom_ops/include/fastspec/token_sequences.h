// Token-sequence tables (a request's bad words for process_logits, its stop
// sequences for update_model_status): one row of entries holding the sequences one
// after another, split at the negative entries (fastspec/reference/sequences.py).
#pragma once

#include <cstdint>

#include "fastspec/common.h"

namespace fastspec {

// Whether the sequence ending at entry e of a table row is preceded, in the output, by the rest
// of itself: a sequence ends where a non-negative entry is followed by a negative one or the
// row's end, and begins after the negative entry before it. `entry(i)` reads entry i;
// `from_end(k)` is the output's k-th token from its end, `available` its length. Entry e itself
// is not compared (a bad word bans it; a stop sequence compares it with the new token).
template <typename Entry, typename FromEnd>
FS_HD bool sequence_rest_precedes(const Entry& entry, int64_t e, int64_t width, int64_t available,
                                  const FromEnd& from_end) {
  if (entry(e) < 0 || (e + 1 < width && entry(e + 1) >= 0)) return false;
  for (int64_t k = 0; k < e; ++k) {
    const int64_t token = entry(e - 1 - k);
    if (token < 0) return true;  // the start of the sequence
    if (k >= available || token != from_end(k)) return false;
  }
  return true;
}

}  // namespace fastspec
