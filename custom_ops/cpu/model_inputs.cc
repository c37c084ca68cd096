// model_inputs on the CPU: each slot's grid row copied, then its draft window
// written over it; then each output row's position. One thread.
#include "fastspec/model_inputs.h"

#include <cstring>

namespace fastspec {

int model_inputs_cpu(const ModelInputsParams& p) {
  if (!model_inputs_sizes_ok(p)) return kInvalidArgument;
  const int64_t cols = p.max_model_len;
  for (int64_t b = 0; b < p.batch; ++b) {
    const int64_t* committed = p.token_ids_all + b * cols;
    const int64_t* drafts = p.draft_tokens + b * p.draft_cols;
    int64_t* out = p.tokens + b * cols;
    std::memcpy(out, committed, sizeof(int64_t) * cols);
    const int64_t rows = slot_rows(p, b), start = slot_start(p, b);
    if (p.seq_lens_encoder[b] <= 0 && rows > 1 && start < cols) {  // the draft window, clipped to the grid
      const int64_t first = start < 0 ? 0 : start;
      const int64_t end = min64(cols, add_sat64(start, rows - 1));
      for (int64_t c = first; c < end; ++c) out[c] = grid_token(p, b, c, start, rows, drafts, committed[c]);
    }
    p.lengths[b] = slot_length(p, b);
  }
  for (int64_t r = 0; r < p.rows; ++r) p.row_pos[r] = row_position(p, r);
  return kOk;
}

}  // namespace fastspec
