// Conformance cases for cuRAND's device API: every generator and function cunumpy emulates.
// tools/record_curand.py runs these kernels on a GPU and stores the outputs in
// tests/random/curand_h200.npz; tests/random/test_curand_device.py runs them on every CUDA
// engine and compares. Thread i runs case i: a fresh curand_init(seed[i], subseq[i],
// offset[i]) before each group of outputs, so that one wrong function moves nothing else.
#include <curand_kernel.h>

#define NU 41
#define NF 48
#define ND 48
#define NP 24

// curand_init out of line (one copy per generator keeps the GPU's compile time short).
__device__ __noinline__ void init(curandStateXORWOW_t* s, unsigned long long seed,
                                  unsigned long long sub, unsigned long long off) {
  curand_init(seed, sub, off, s);
}
__device__ __noinline__ void init(curandStatePhilox4_32_10_t* s, unsigned long long seed,
                                  unsigned long long sub, unsigned long long off) {
  curand_init(seed, sub, off, s);
}
__device__ __noinline__ void init(curandStateMRG32k3a_t* s, unsigned long long seed,
                                  unsigned long long sub, unsigned long long off) {
  curand_init(seed, sub, off, s);
}

// Jumps by whole subsequences (and, for MRG32k3a, by sequences of 2^127).
__device__ __noinline__ void jump(curandStateXORWOW_t* s, unsigned long long n) { skipahead_sequence(n, s); }
__device__ __noinline__ void jump(curandStatePhilox4_32_10_t* s, unsigned long long n) {
  skipahead_sequence(n, s);
}
__device__ __noinline__ void jump(curandStateMRG32k3a_t* s, unsigned long long n) {
  skipahead_subsequence(n & ((1ull << 56) - 1), s);  // the GPU's table has 56 powers
}
__device__ __noinline__ void jump2(curandStateXORWOW_t* s, unsigned long long n) {
  skipahead(n, s);
  skipahead(3, s);
}
__device__ __noinline__ void jump2(curandStatePhilox4_32_10_t* s, unsigned long long n) {
  skipahead(n, s);
  skipahead(3, s);
}
__device__ __noinline__ void jump2(curandStateMRG32k3a_t* s, unsigned long long n) { skipahead_sequence(n, s); }

// Philox's four-wide functions; nothing for the others.
__device__ void four(curandStateXORWOW_t*, unsigned long long, unsigned long long,
                     unsigned long long, unsigned int*, float*, double*) {}
__device__ void four(curandStateMRG32k3a_t*, unsigned long long, unsigned long long,
                     unsigned long long, unsigned int*, float*, double*) {}

__device__ void four(curandStatePhilox4_32_10_t* s, unsigned long long seed,
                     unsigned long long sub, unsigned long long off, unsigned int* u, float* f,
                     double* d) {
  init(s, seed, sub, off);
  uint4 a = curand4(s);
  u[28] = a.x; u[29] = a.y; u[30] = a.z; u[31] = a.w;
  init(s, seed, sub, off);
  (void)curand(s);  // curand4 from inside a block
  a = curand4(s);
  u[32] = a.x; u[33] = a.y; u[34] = a.z; u[35] = a.w;
  a = curand4(s);
  u[36] = a.x; u[37] = a.y; u[38] = a.z; u[39] = a.w;
  init(s, seed, sub, off);
  float4 g = curand_uniform4(s);
  f[28] = g.x; f[29] = g.y; f[30] = g.z; f[31] = g.w;
  init(s, seed, sub, off);
  g = curand_normal4(s);
  f[32] = g.x; f[33] = g.y; f[34] = g.z; f[35] = g.w;
  init(s, seed, sub, off);
  g = curand_log_normal4(s, 0.5f, 1.5f);
  f[36] = g.x; f[37] = g.y; f[38] = g.z; f[39] = g.w;
  init(s, seed, sub, off);
  double2 e = curand_uniform2_double(s);
  d[28] = e.x; d[29] = e.y;
  e = curand_uniform2_double(s);
  d[30] = e.x; d[31] = e.y;
  init(s, seed, sub, off);
  double4 h = curand_uniform4_double(s);
  d[32] = h.x; d[33] = h.y; d[34] = h.z; d[35] = h.w;
  init(s, seed, sub, off);
  h = curand_normal4_double(s);
  d[36] = h.x; d[37] = h.y; d[38] = h.z; d[39] = h.w;
  init(s, seed, sub, off);
  h = curand_log_normal4_double(s, 0.25, 0.75);
  d[40] = h.x; d[41] = h.y; d[42] = h.z; d[43] = h.w;
}

template <class S>
__device__ void run_case(int i, const unsigned long long* seeds, const unsigned long long* subs,
                         const unsigned long long* offs, const unsigned long long* skips,
                         unsigned int* u, float* f, double* d) {
  unsigned long long seed = seeds[i], sub = subs[i], off = offs[i], skip = skips[i];
  u += (size_t)i * NU;
  f += (size_t)i * NF;
  d += (size_t)i * ND;
  S s;
  init(&s, seed, sub, off);
  for (int k = 0; k < 16; ++k) u[k] = curand(&s);
  init(&s, seed, sub, off);
  skipahead(skip, &s);
  for (int k = 16; k < 20; ++k) u[k] = curand(&s);
  init(&s, seed, sub, off);
  jump(&s, skip);
  for (int k = 20; k < 24; ++k) u[k] = curand(&s);
  init(&s, seed, sub, off);
  jump2(&s, skip);
  for (int k = 24; k < 28; ++k) u[k] = curand(&s);

  init(&s, seed, sub, off);
  for (int k = 0; k < 8; ++k) f[k] = curand_uniform(&s);
  init(&s, seed, sub, off);
  for (int k = 8; k < 16; ++k) f[k] = curand_normal(&s);
  init(&s, seed, sub, off);
  for (int k = 16; k < 20; k += 2) {
    float2 v = curand_normal2(&s);
    f[k] = v.x;
    f[k + 1] = v.y;
  }
  init(&s, seed, sub, off);
  for (int k = 20; k < 24; ++k) f[k] = curand_log_normal(&s, 0.5f, 1.5f);
  init(&s, seed, sub, off);
  for (int k = 24; k < 28; k += 2) {
    float2 v = curand_log_normal2(&s, -1.0f, 0.5f);
    f[k] = v.x;
    f[k + 1] = v.y;
  }
  init(&s, seed, sub, off);  // a kept normal survives other draws, a log-normal replaces it
  f[40] = curand_normal(&s);
  f[41] = curand_uniform(&s);
  f[42] = curand_normal(&s);
  f[43] = curand_log_normal(&s, 0.0f, 1.0f);
  f[44] = curand_normal(&s);
  f[45] = curand_log_normal(&s, 0.0f, 1.0f);
  f[46] = curand_normal(&s);
  f[47] = curand_normal(&s);

  init(&s, seed, sub, off);
  for (int k = 0; k < 8; ++k) d[k] = curand_uniform_double(&s);
  init(&s, seed, sub, off);
  for (int k = 8; k < 16; ++k) d[k] = curand_normal_double(&s);
  init(&s, seed, sub, off);
  for (int k = 16; k < 20; k += 2) {
    double2 v = curand_normal2_double(&s);
    d[k] = v.x;
    d[k + 1] = v.y;
  }
  init(&s, seed, sub, off);
  for (int k = 20; k < 24; ++k) d[k] = curand_log_normal_double(&s, 0.25, 0.75);
  init(&s, seed, sub, off);
  for (int k = 24; k < 28; k += 2) {
    double2 v = curand_log_normal2_double(&s, 1.0, 0.125);
    d[k] = v.x;
    d[k + 1] = v.y;
  }
  init(&s, seed, sub, off);
  d[44] = curand_normal_double(&s);
  d[45] = curand_uniform_double(&s);
  d[46] = curand_normal_double(&s);
  d[47] = curand_normal(&s);  // the float and double caches are separate
  four(&s, seed, sub, off, u, f, d);
  u[40] = (unsigned int)(sizeof(S) * 1000 + alignof(S));
}

template <class S>
__device__ void run_poisson(int i, const unsigned long long* seeds, const unsigned long long* subs,
                            const unsigned long long* offs, const double* lambdas,
                            unsigned int* p) {
  S s;
  p += (size_t)i * NP;
  init(&s, seeds[i], subs[i], offs[i]);
  for (int k = 0; k < 16; ++k) p[k] = curand_poisson(&s, lambdas[i]);
}

// gen: 0 XORWOW, 1 Philox4_32_10, 2 MRG32k3a.
extern "C" __global__ void cases(int gen, int n, const unsigned long long* seeds,
                                 const unsigned long long* subs, const unsigned long long* offs,
                                 const unsigned long long* skips, unsigned int* u, float* f,
                                 double* d) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  if (gen == 0) run_case<curandStateXORWOW_t>(i, seeds, subs, offs, skips, u, f, d);
  if (gen == 1) run_case<curandStatePhilox4_32_10_t>(i, seeds, subs, offs, skips, u, f, d);
  if (gen == 2) run_case<curandStateMRG32k3a_t>(i, seeds, subs, offs, skips, u, f, d);
}

// gen as above; 3: curand_poisson4 (Philox4_32_10) into p[16:24].
extern "C" __global__ void poisson(int gen, int n, const unsigned long long* seeds,
                                   const unsigned long long* subs, const unsigned long long* offs,
                                   const double* lambdas, unsigned int* p) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  if (gen == 0) run_poisson<curandStateXORWOW_t>(i, seeds, subs, offs, lambdas, p);
  if (gen == 1) run_poisson<curandStatePhilox4_32_10_t>(i, seeds, subs, offs, lambdas, p);
  if (gen == 2) run_poisson<curandStateMRG32k3a_t>(i, seeds, subs, offs, lambdas, p);
  if (gen == 3) {
    curandStatePhilox4_32_10_t s;
    p += (size_t)i * NP;
    init(&s, seeds[i], subs[i], offs[i]);
    for (int k = 16; k < 24; k += 4) {
      uint4 v = curand_poisson4(&s, lambdas[i]);
      p[k] = v.x; p[k + 1] = v.y; p[k + 2] = v.z; p[k + 3] = v.w;
    }
  }
}
