// The CUDA runtime types as the emulation spells them, in their own namespace
// so that the glue of a real CUDA build can declare the emulated launchers
// beside the nvcc-built ones (launchers.h). Values follow the CUDA runtime's.
#pragma once

namespace cuda_emu {

enum Error : int {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorLaunchFailure = 719,  // the emulation caught a kernel breaking a rule
};
struct StreamTag;
using Stream = StreamTag*;

}  // namespace cuda_emu
