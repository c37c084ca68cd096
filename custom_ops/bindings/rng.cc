// Bindings of the shared arithmetic: the Philox generator and the f16 / mass
// conversions (known-answer tests on host and device).
#include <pybind11/stl.h>

#include <vector>

#include "bindings.h"
#include "emulation/launchers.h"
#include "fastspec/philox.h"
#include "fastspec/sampling.h"

namespace fastspec_bindings {

void bind_rng(py::module_& m) {
  m.def("f16_to_f32_bits", &fastspec::f16_to_f32_bits);
  m.def("mass_of_bits", &fastspec::mass_of_bits);
  m.def("rand64", &fastspec::rand64, py::arg("seed"), py::arg("position"), py::arg("stream"), py::arg("index") = 0);
  m.def("philox4x32_10", [](uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3, uint32_t k0, uint32_t k1) {
    const auto r = fastspec::philox4x32_10(c0, c1, c2, c3, k0, k1);
    return py::make_tuple(r.x[0], r.x[1], r.x[2], r.x[3]);
  });
  m.def(
      "rand64_cuda_emulator",
      [](const std::vector<int64_t>& seeds, const std::vector<int64_t>& positions, uint32_t stream_id) {
        if (seeds.size() != positions.size())
          throw std::invalid_argument("rand64_cuda_emulator: one position per seed");
        std::vector<uint64_t> out(seeds.size(), 0);
        const auto range = [](const void* p, size_t bytes) {
          return cuda_emu::Range{reinterpret_cast<uintptr_t>(p), reinterpret_cast<uintptr_t>(p) + bytes};
        };
        cuda_emu::Session session;
        session.arrays = {range(seeds.data(), seeds.size() * 8), range(positions.data(), positions.size() * 8),
                          range(out.data(), out.size() * 8)};
        const cuda_emu::Error status = cuda_emu::run_session(session, [&] {
          return fastspec::rand64_cuda_emulated(seeds.data(), positions.data(), stream_id, out.data(),
                                                static_cast<int64_t>(out.size()), nullptr);
        });
        if (status != cuda_emu::cudaSuccess) throw std::runtime_error(std::string("rand64: ") + cuda_emu::last_error());
        return out;
      },
      py::arg("seeds"), py::arg("positions"), py::arg("stream_id"),
      "rand64 element-wise by the CUDA kernel (custom_ops/cuda/philox.cu) on the CUDA emulation");
#if defined(FASTSPEC_WITH_CUDA)
  m.def(
      "rand64_cuda",
      [](uintptr_t seeds, uintptr_t positions, uint32_t stream_id, uintptr_t out, int64_t n, uintptr_t stream) {
        check_cuda(fastspec::rand64_cuda(ptr<const int64_t>(seeds), ptr<const int64_t>(positions), stream_id,
                                         ptr<uint64_t>(out), n, as_stream(stream)),
                   "rand64_cuda");
      },
      py::arg("seeds"), py::arg("positions"), py::arg("stream_id"), py::arg("out"), py::arg("n"),
      py::arg("stream") = 0);
#endif
}

}  // namespace fastspec_bindings
