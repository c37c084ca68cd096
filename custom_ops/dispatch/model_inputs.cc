// model_inputs on every backend (docs/ops/model_inputs.md).
#include "emulation/launchers.h"  // the emulated CUDA launchers FASTSPEC_REGISTER_OP registers
#include "fastspec/params/model_inputs.h"

namespace fastspec {

FASTSPEC_REGISTER_OP(model_inputs, model_inputs_params);

}  // namespace fastspec
