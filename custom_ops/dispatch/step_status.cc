// step_status on every backend (docs/ops/step_status.md).
#include "emulation/launchers.h"  // the emulated CUDA launchers FASTSPEC_REGISTER_OP registers
#include "fastspec/params/step_status.h"

namespace fastspec {

FASTSPEC_REGISTER_OP(step_status, step_status_params);

}  // namespace fastspec
