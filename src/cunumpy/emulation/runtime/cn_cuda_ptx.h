// cunumpy CPU emulation: what the inline PTX the emulator runs (emulation/_cuda_ptx.py) calls.
// Registers are bits (uint16_t, uint32_t, uint64_t); each function reads them as its PTX
// instruction's type does.
#ifndef CN_CUDA_PTX_H
#define CN_CUDA_PTX_H

#include <cstring>
#include "cn_cuda_halfops.h"

namespace cn {
namespace cuda {

inline uint32_t ptx_linear(uint3 t, dim3 d) { return (t.z * d.y + t.y) * d.x + t.x; }
inline uint32_t ptx_lane(uint3 t, dim3 d) { return ptx_linear(t, d) & 31u; }
inline uint32_t ptx_smid(uint3 b, dim3 g) { return ((b.z * g.y + b.y) * g.x + b.x) % 132u; }

template <class T>
inline uint64_t ptx_bits_of(const T& v) {
  uint64_t u = 0;
  std::memcpy(&u, &v, sizeof(T) < 8 ? sizeof(T) : 8);
  return u;
}

// An operand read into the register of its constraint: h 16 bits, r 32, l 64; f and d take the
// bits of the value as a float or a double; pointers (checked ones too) give their address.
template <char C, class T>
inline auto ptx_in(const T& v) {
  using D = std::decay_t<T>;
  if constexpr (C == 'f') {
    if constexpr (std::is_arithmetic<D>::value) { float f = float(v); return (uint32_t)ptx_bits_of(f); }
    else return (uint32_t)ptx_bits_of(v);
  } else if constexpr (C == 'd') {
    if constexpr (std::is_arithmetic<D>::value) { double f = double(v); return ptx_bits_of(f); }
    else return ptx_bits_of(v);
  } else {
    using R = std::conditional_t<C == 'h' || C == 'c' || C == 'b', uint16_t,
                                 std::conditional_t<C == 'r', uint32_t, uint64_t>>;
    if constexpr (is_data_pointer<D>) return (R)reinterpret_cast<uintptr_t>(v);
    else if constexpr (checked_kind<D>::value == 1) return (R)reinterpret_cast<uintptr_t>(v.p);
    else if constexpr (std::is_integral<D>::value || std::is_enum<D>::value) return (R)v;
    else return (R)ptx_bits_of(v);  // a __half, a float in an "r" register: its bits
  }
}

// A register written back to its operand through the constraint's type.
template <char C, class T, class R>
inline void ptx_out(T& lhs, R bits) {
  using D = std::decay_t<T>;
  if constexpr (C == 'f') {
    uint32_t b = (uint32_t)bits; float f; std::memcpy(&f, &b, 4);
    if constexpr (std::is_arithmetic<D>::value) lhs = D(f); else std::memcpy(&lhs, &b, sizeof(D) < 4 ? sizeof(D) : 4);
  } else if constexpr (C == 'd') {
    uint64_t b = (uint64_t)bits; double f; std::memcpy(&f, &b, 8);
    if constexpr (std::is_arithmetic<D>::value) lhs = D(f); else std::memcpy(&lhs, &b, sizeof(D) < 8 ? sizeof(D) : 8);
  } else if constexpr (std::is_integral<D>::value || std::is_enum<D>::value) {
    lhs = (D)bits;
  } else if constexpr (std::is_pointer<D>::value) {
    lhs = reinterpret_cast<D>((uintptr_t)bits);
  } else {
    std::memcpy(&lhs, &bits, sizeof(D) < sizeof(R) ? sizeof(D) : sizeof(R));
  }
}

template <class T>
inline T ptx_load(uint64_t addr) { T v; std::memcpy(&v, reinterpret_cast<const void*>((uintptr_t)addr), sizeof(T)); return v; }
template <class T>
inline void ptx_store(uint64_t addr, uint64_t bits) { T v = (T)bits; std::memcpy(reinterpret_cast<void*>((uintptr_t)addr), &v, sizeof(T)); }

// cvt: type codes 1-4 u8..u64, 5-8 s8..s64, 9 f16, 10 bf16, 11 f32, 12 f64; rounding 0-3 (rn, rz,
// rm, rp) for a float result, 10-13 (rni, rzi, rmi, rpi) to an integer, -1 none given.
constexpr int ptx_width(int code) {
  return code == 1 || code == 5 ? 8 : code == 2 || code == 6 || code == 9 || code == 10 ? 16
       : code == 3 || code == 7 || code == 11 ? 32 : 64;
}
template <int D, int A>
inline uint64_t ptx_cvt(uint64_t in, int rnd, int sat, int relu, int ftz) {
  constexpr int aw = ptx_width(A), dw = ptx_width(D);
  long double v;
  if constexpr (A <= 4) {
    v = (long double)(aw == 64 ? in : (in & ((1ull << aw) - 1)));
  } else if constexpr (A <= 8) {
    int64_t s = aw == 64 ? (int64_t)in : (int64_t)(in << (64 - aw)) >> (64 - aw);
    v = (long double)s;
  } else if constexpr (A == 9) {
    v = (long double)float(__builtin_bit_cast(_Float16, (uint16_t)in));
  } else if constexpr (A == 10) {
    v = (long double)__builtin_bit_cast(float, (uint32_t)((in & 0xffffu) << 16));
  } else if constexpr (A == 11) {
    float f = __builtin_bit_cast(float, (uint32_t)in);
    if (ftz && f != 0 && std::fabs(f) < 1.17549435e-38f) f = std::copysign(0.0f, f);
    v = f;
  } else {
    v = __builtin_bit_cast(double, in);
  }
  const bool nan = v != v;
  if (rnd >= 10 && !nan) {  // round to an integral value first
    int m = rnd - 10;
    v = m == 1 ? std::trunc(v) : m == 2 ? std::floor(v) : m == 3 ? std::ceil(v) : std::nearbyint(v);
  }
  if constexpr (D >= 9) {
    if (nan) return D == 9 ? 0x7fffu : D == 10 ? 0x7fffu : D == 11 ? 0x7fffffffu : 0x7fffffffffffffffull;
    if (relu && v < 0) v = 0;
    if (sat) v = v < 0 ? 0 : (v > 1 ? 1 : v);
    Round16 mode = (rnd >= 0 && rnd < 4) ? Round16(rnd) : RN16;
    if constexpr (D == 9) {
      long double r = round16<10, -14, 15>(v, mode);
      return __builtin_bit_cast(uint16_t, (_Float16)(float)r);
    } else if constexpr (D == 10) {
      long double r = round16<7, -126, 127>(v, mode);
      return __builtin_bit_cast(uint32_t, (float)r) >> 16;
    } else if constexpr (D == 11) {
      float r = (float)round16<23, -126, 127>(v, mode);
      if (ftz && r != 0 && std::fabs(r) < 1.17549435e-38f) r = std::copysign(0.0f, r);
      return __builtin_bit_cast(uint32_t, r);
    } else {
      return __builtin_bit_cast(uint64_t, (double)round16<52, -1022, 1023>(v, mode));
    }
  } else {
    const bool src_float = A >= 9;
    if (src_float) {
      if (nan) return 0;
      if (rnd >= 0 && rnd < 4) {  // an integer rounding written without the i
        v = rnd == 1 ? std::trunc(v) : rnd == 2 ? std::floor(v) : rnd == 3 ? std::ceil(v) : std::nearbyint(v);
      } else if (rnd < 0) {
        v = std::trunc(v);
      }
    }
    long double lo, hi;
    if constexpr (D <= 4) { lo = 0; hi = dw == 64 ? 18446744073709551615.0L : (long double)((1ull << dw) - 1); }
    else { lo = -std::ldexp(1.0L, dw - 1); hi = std::ldexp(1.0L, dw - 1) - 1; }
    if (src_float || sat) {
      if (v < lo) v = lo;
      if (v > hi) v = hi;
      uint64_t r = D <= 4 ? (uint64_t)v : (uint64_t)(int64_t)v;
      return dw == 64 ? r : (r & ((1ull << dw) - 1));
    }
    uint64_t r = in;  // integer to integer: the low bits, sign- or zero-extended from the source
    if constexpr (A >= 5 && A <= 8 && aw < 64) r = (uint64_t)((int64_t)(in << (64 - aw)) >> (64 - aw));
    else if constexpr (aw < 64) r = in & ((1ull << aw) - 1);
    return dw == 64 ? r : (r & ((1ull << dw) - 1));
  }
}

// prmt: mode 0 the generic byte selector, 1-6 f4e, b4e, rc8, ecl, ecr, rc16.
inline uint32_t ptx_prmt(uint64_t a, uint64_t b, uint64_t c, int mode) {
  uint64_t tmp = ((b & 0xffffffffull) << 32) | (a & 0xffffffffull);
  uint32_t d = 0;
  unsigned sel = (unsigned)(c & 3u);
  for (int i = 0; i < 4; ++i) {
    unsigned s;
    bool sign = false;
    switch (mode) {
      case 0: s = (unsigned)(c >> (4 * i)) & 0xfu; sign = (s & 8u) != 0; s &= 7u; break;
      case 1: s = (sel + i) & 7u; break;
      case 2: s = (sel - i) & 7u; break;
      case 3: s = sel; break;
      case 4: s = (unsigned)i > sel ? (unsigned)i : sel; break;
      case 5: s = (unsigned)i < sel ? (unsigned)i : sel; break;
      default: s = (sel & 1u) * 2u + (i & 1u); break;
    }
    uint32_t byte = (uint32_t)(tmp >> (8 * s)) & 0xffu;
    if (sign) byte = (byte & 0x80u) ? 0xffu : 0u;
    d |= byte << (8 * i);
  }
  return d;
}

inline uint32_t ptx_lop3(uint64_t a, uint64_t b, uint64_t c, uint64_t lut) {
  uint32_t x = (uint32_t)a, y = (uint32_t)b, z = (uint32_t)c, d = 0;
  for (int m = 0; m < 8; ++m) {
    if (!((lut >> m) & 1u)) continue;
    d |= ((m & 4) ? x : ~x) & ((m & 2) ? y : ~y) & ((m & 1) ? z : ~z);
  }
  return d;
}

template <int W, bool S>
inline uint64_t ptx_bfe(uint64_t a, uint64_t b, uint64_t c) {
  unsigned pos = (unsigned)(b & 0xffu), len = (unsigned)(c & 0xffu);
  unsigned msb = pos + len - 1 < (unsigned)W - 1 ? pos + len - 1 : (unsigned)W - 1;
  uint64_t sbit = (S && len != 0) ? ((a >> msb) & 1u) : 0u;
  uint64_t d = 0;
  for (unsigned i = 0; i < (unsigned)W; ++i) {
    uint64_t bit = (i < len && pos + i <= (unsigned)W - 1) ? ((a >> (pos + i)) & 1u) : sbit;
    d |= bit << i;
  }
  return W == 64 ? d : (d & ((1ull << W) - 1));
}

template <int W, bool S, bool SHIFT>
inline uint32_t ptx_bfind(uint64_t a) {
  uint64_t x = W == 64 ? a : (a & ((1ull << W) - 1));
  if (S && ((x >> (W - 1)) & 1u)) x = ~x & (W == 64 ? ~0ull : ((1ull << W) - 1));
  if (x == 0) return 0xffffffffu;
  int msb = 63 - __builtin_clzll(x);
  return SHIFT ? (uint32_t)(W - 1 - msb) : (uint32_t)msb;
}

// vabsdiff4.add: the sum of the four byte-wise absolute differences, plus c.
template <bool S>
inline uint32_t ptx_vabsdiff4_add(uint64_t a, uint64_t b, uint64_t c) {
  uint32_t sum = (uint32_t)c;
  for (int i = 0; i < 4; ++i) {
    int x = S ? (int)(int8_t)(a >> (8 * i)) : (int)(uint8_t)(a >> (8 * i));
    int y = S ? (int)(int8_t)(b >> (8 * i)) : (int)(uint8_t)(b >> (8 * i));
    sum += (uint32_t)(x > y ? x - y : y - x);
  }
  return sum;
}

}  // namespace cuda
}  // namespace cn

#endif  // CN_CUDA_PTX_H
