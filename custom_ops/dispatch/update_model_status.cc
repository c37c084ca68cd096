// update_model_status on every backend (docs/ops/update_model_status.md).
#include "emulation/launchers.h"  // the emulated CUDA launchers FASTSPEC_REGISTER_OP registers
#include "fastspec/params/update_model_status.h"

namespace fastspec {

FASTSPEC_REGISTER_OP(update_model_status, update_model_status_params);

}  // namespace fastspec
