// The launcher table behind fastspec::run: filled by the static Registrars of
// the glue files when the library loads, read-only afterwards.
#include <map>
#include <string>

#include "fastspec/op_call.h"

namespace fastspec {
namespace {

struct Entry {
  Launcher launchers[kNumBackends] = {};
  std::string backends;
};

std::map<std::string, Entry>& table() {
  static std::map<std::string, Entry> entries;  // built on first use: safe during static init
  return entries;
}

}  // namespace

const char* backend_name(Backend backend) {
  switch (backend) {
    case Backend::kCpu:
      return "cpu";
    case Backend::kCuda:
      return "cuda";
    case Backend::kXpu:
      return "xpu";
    case Backend::kCudaEmulator:
      return "cuda_emulator";
  }
  return "?";
}

Registrar::Registrar(const char* op, Backend backend, Launcher launcher) {
  Entry& entry = table()[op];
  entry.launchers[static_cast<int>(backend)] = launcher;
  entry.backends.clear();
  for (int b = 0; b < kNumBackends; ++b) {
    if (!entry.launchers[b]) continue;
    if (!entry.backends.empty()) entry.backends += ", ";
    entry.backends += backend_name(static_cast<Backend>(b));
  }
}

int run(const char* op, const OpCall& call) {
  const auto found = table().find(op);
  const int index = static_cast<int>(call.backend);
  if (found == table().end() || index < 0 || index >= kNumBackends || !found->second.launchers[index]) {
    return kNoKernel;
  }
  return found->second.launchers[index](call);
}

const char* backends_of(const char* op) {
  const auto found = table().find(op);
  return found == table().end() ? "none" : found->second.backends.c_str();
}

}  // namespace fastspec
