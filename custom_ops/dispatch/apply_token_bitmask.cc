// apply_token_bitmask on every backend (docs/ops/apply_token_bitmask.md).
#include "emulation/launchers.h"  // the emulated CUDA launchers FASTSPEC_REGISTER_OP registers
#include "fastspec/params/apply_token_bitmask.h"

namespace fastspec {

FASTSPEC_REGISTER_OP(apply_token_bitmask, apply_token_bitmask_params);

}  // namespace fastspec
