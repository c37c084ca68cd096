// adaptive_plan and adaptive_observe on every backend (docs/ops/adaptive.md).
#include "emulation/launchers.h"  // the emulated CUDA launchers FASTSPEC_REGISTER_OP registers
#include "fastspec/params/adaptive_observe.h"
#include "fastspec/params/adaptive_plan.h"

namespace fastspec {

FASTSPEC_REGISTER_OP(adaptive_plan, adaptive_plan_params);
FASTSPEC_REGISTER_OP(adaptive_observe, adaptive_observe_params);

}  // namespace fastspec
