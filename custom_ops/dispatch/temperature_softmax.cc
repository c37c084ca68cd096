// temperature_softmax on every backend (docs/ops/temperature_softmax.md).
#include "emulation/launchers.h"  // the emulated CUDA launchers FASTSPEC_REGISTER_OP registers
#include "fastspec/params/temperature_softmax.h"

namespace fastspec {

FASTSPEC_REGISTER_OP(temperature_softmax, temperature_softmax_params);

}  // namespace fastspec
