// update_model_status on every backend (docs/ops/update_model_status.md). The
// widths of the optional stop tables come from the tables themselves (0: left out).
#include "emulation/launchers.h"  // the emulated CUDA launchers FASTSPEC_REGISTER_OP registers
#include "fastspec/params/update_model_status.h"

namespace fastspec {
namespace {

namespace args = arg::update_model_status;

UpdateModelStatusParams update_params(const OpCall& call) {
  UpdateModelStatusParams params = update_model_status_params(call);
  if (params.stop_token_ids != nullptr) params.stop_cols = call.size(args::stop_token_ids, 1);
  if (params.stop_sequences != nullptr) params.stop_sequence_cols = call.size(args::stop_sequences, 1);
  return params;
}

}  // namespace

FASTSPEC_REGISTER_OP(update_model_status, update_params);

}  // namespace fastspec
