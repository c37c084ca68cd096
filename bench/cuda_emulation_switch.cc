// How the CUDA emulation lets the threads of a block meet (docs/cuda_emulation.md): the cost per
// thread and barrier of its fiber switch, of ucontext, and of pooled host threads. Build and run:
//   g++ -O2 -std=c++17 -Icustom_ops/cuda/emulation bench/cuda_emulation_switch.cc \
//       custom_ops/cuda/emulation/fiber.cc -pthread -o /tmp/switch && /tmp/switch
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>
#include <mutex>
#include <condition_variable>
#include <ucontext.h>
#include "fiber.h"
using namespace std::chrono;
static cuda_emu::Context sched;
static std::vector<cuda_emu::Context> ctx;
static int cur;
static const int N = 512, ROUNDS = 200;
static void body(void*) {
  for (;;) {
    cuda_emu::switch_context(ctx[cur], sched);
  }
}
static ucontext_t usched;
static std::vector<ucontext_t> uctx;
static void ubody() {
  for (;;) swapcontext(&uctx[cur], &usched);
}
int main() {
  std::vector<std::vector<char>> stacks(N, std::vector<char>(64 * 1024));
  ctx.resize(N);
  for (int i = 0; i < N; ++i) cuda_emu::make_context(ctx[i], stacks[i].data(), stacks[i].size(), body, nullptr);
  auto t0 = steady_clock::now();
  for (int r = 0; r < ROUNDS; ++r)
    for (cur = 0; cur < N; ++cur) cuda_emu::switch_context(sched, ctx[cur]);
  double f = duration<double, std::nano>(steady_clock::now() - t0).count() / (2.0 * N * ROUNDS);
  uctx.resize(N);
  for (int i = 0; i < N; ++i) {
    getcontext(&uctx[i]);
    uctx[i].uc_stack.ss_sp = stacks[i].data();
    uctx[i].uc_stack.ss_size = stacks[i].size();
    uctx[i].uc_link = nullptr;
    makecontext(&uctx[i], ubody, 0);
  }
  t0 = steady_clock::now();
  for (int r = 0; r < ROUNDS; ++r)
    for (cur = 0; cur < N; ++cur) swapcontext(&usched, &uctx[cur]);
  double u = duration<double, std::nano>(steady_clock::now() - t0).count() / (2.0 * N * ROUNDS);
  // pooled host threads meeting at a barrier (condition variable), 64 threads
  const int T = 64, B = 200;
  std::mutex m;
  std::condition_variable cv;
  int arrived = 0;
  long gen = 0;
  auto barrier = [&] {
    std::unique_lock<std::mutex> l(m);
    long g = gen;
    if (++arrived == T) {
      arrived = 0;
      ++gen;
      cv.notify_all();
    } else
      cv.wait(l, [&] { return gen != g; });
  };
  t0 = steady_clock::now();
  std::vector<std::thread> ths;
  for (int i = 0; i < T; ++i)
    ths.emplace_back([&] {
      for (int b = 0; b < B; ++b) barrier();
    });
  for (auto& t : ths) t.join();
  double th = duration<double, std::nano>(steady_clock::now() - t0).count() / (double(T) * B);
  std::printf(
      "per thread and barrier: fiber switch pair %.1f ns, ucontext %.1f ns, host threads (64, condvar) %.0f ns\n",
      2 * f, 2 * u, th);
}
