// pack_rows on the CPU: the slots in order (their kinds, drafts, rows and the
// prefix sums), then the rows' slots, on one thread.
#include "fastspec/pack_rows.h"

namespace fastspec {

int pack_rows_cpu(const PackRowsParams& p) {
  if (!pack_rows_sizes_ok(p)) return kInvalidArgument;
  int32_t cu = 0;
  p.cu_seqlens_q_output[0] = 0;
  for (int64_t b = 0; b < p.batch; ++b) {
    cu = add_rows_sat(cu, pack_slot(p, b));
    p.cu_seqlens_q_output[b + 1] = cu;
  }
  int64_t b = 0;
  for (int64_t r = 0; r < p.rows; ++r) {  // rows in order: the slot only moves forward
    while (b < p.batch && p.cu_seqlens_q_output[b + 1] <= r) ++b;
    p.batch_id_per_token_output[r] = b < p.batch ? static_cast<int32_t>(b) : -1;
  }
  return kOk;
}

}  // namespace fastspec
