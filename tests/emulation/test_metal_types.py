"""cn_metal_types.h: the MSL types and functions the Metal emulator compiles kernels with.

One C++ program (built once per module) exercises the header: it reads input arrays that the
tests write, writes its results back as raw binary files, and runs compile-time and run-time
self-checks (lines starting with ``FAIL``). Results are compared with NumPy.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import numpy as np
import pytest
from _metal_types_helpers import _bf16_reference, _compiler

ROOT = Path(__file__).resolve().parents[2]
RUNTIME = ROOT / "src" / "cunumpy" / "emulation" / "runtime"
HEADER = RUNTIME / "cn_metal_types.h"

UNARY = [
    "sqrt", "rsqrt", "exp", "exp2", "exp10", "log", "log2", "log10", "sin", "cos", "tan",
    "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "sinpi",
    "cospi", "tanpi", "floor", "ceil", "round", "rint", "trunc", "fract", "fabs", "abs",
    "saturate", "sign", "cbrt", "log1p", "expm1", "asinpi", "acospi", "atanpi", "logb",
]  # fmt: skip
BINARY = ["pow", "atan2", "fmin", "fmax", "min", "max", "fmod", "copysign", "hypot", "step",
          "remainder", "fdim", "atan2pi"]  # fmt: skip
INT_UNARY = ["popcount", "clz", "ctz", "reverse_bits"]
INT_BINARY = ["mulhi", "rotate", "hadd", "rhadd", "absdiff"]
SAT = ["add_sat", "sub_sat"]


def _unary_cases() -> str:
    return "\n".join(
        f"    {{ float4 v(x[i], x[i + 1], x[i + 2], x[i + 3]); float4 r = {f}(v); "
        f'for (int k = 0; k < 4; ++k) {{ put("{f}", {f}(x[i + k])); '
        f'if (!(r[k] == {f}(x[i + k]) || (isnan(r[k]) && isnan({f}(x[i + k]))))) fail("vec {f}"); }} }}'
        for f in UNARY
    )


def _binary_cases() -> str:
    return "\n".join(
        f'    put("{f}", {f}(x[i], y[i])); '
        f"{{ float2 r = {f}(float4(x[i], 0, y[i], 0).xz, float2(y[i], x[i])); "
        f'if (!(r.x == {f}(x[i], y[i]) || isnan(r.x))) fail("swizzle {f}"); }}'
        for f in BINARY
    )


def _int_cases() -> str:
    lines = [f'    putu("{f}", {f}(a[i]));' for f in INT_UNARY]
    lines += [f'    putu("{f}", {f}(a[i], b[i]));' for f in INT_BINARY]
    lines += [f'    puti("{f}", {f}(int(a[i]), int(b[i])));' for f in SAT]
    lines += [f'    puti("{f}_s", {f}(int(a[i]), int(b[i])));' for f in ["mulhi", "hadd", "rhadd"]]
    return "\n".join(lines)


PROGRAM = r"""
#include "cn_metal_types.h"
#include <cmath>  // after the header: its INFINITY/NAN/... must not clash with <math.h>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

static int fails = 0;
[[maybe_unused]] static void fail(const char* what) { std::printf("FAIL %s\n", what); ++fails; }
#define CHECK(c) do { if (!(c)) { std::printf("FAIL line %d: %s\n", __LINE__, #c); ++fails; } } while (0)

@SPLIT_PRELUDE@
static std::string dir;
template <class T> static std::vector<T> load(const char* name) {
  std::vector<T> out;
  FILE* f = std::fopen((dir + "/" + name).c_str(), "rb");
  if (!f) { fail(name); return out; }
  T v;
  while (std::fread(&v, sizeof(T), 1, f) == 1) out.push_back(v);
  std::fclose(f);
  return out;
}
static std::map<std::string, std::vector<char>> outs;
template <class T> static void put_raw(const char* name, T v) {
  auto& o = outs[name];
  const char* p = reinterpret_cast<const char*>(&v);
  o.insert(o.end(), p, p + sizeof(T));
}
static void put(const char* name, float v) { put_raw(name, v); }
static void putu(const char* name, uint v) { put_raw(name, v); }
static void puti(const char* name, int v) { put_raw(name, v); }

@SPLIT_IO@
// Compile-time checks: layout, constexpr half, result types.
static_assert(sizeof(float2) == 8 && alignof(float2) == 8, "float2");
static_assert(sizeof(float3) == 16 && alignof(float3) == 16, "float3");
static_assert(sizeof(float4) == 16 && alignof(float4) == 16, "float4");
static_assert(sizeof(half3) == 8 && sizeof(half4) == 8 && sizeof(half2) == 4, "half vectors");
static_assert(sizeof(uint3) == 16 && sizeof(int2) == 8 && sizeof(bool4) == 4, "int vectors");
static_assert(sizeof(char3) == 4 && sizeof(uchar4) == 4 && sizeof(short3) == 8, "small vectors");
static_assert(sizeof(long3) == 32 && sizeof(ulong2) == 16, "64-bit vectors");
static_assert(sizeof(packed_float3) == 12 && alignof(packed_float3) == 4, "packed_float3");
static_assert(sizeof(packed_half3) == 6 && sizeof(packed_uchar3) == 3, "packed");
static_assert(sizeof(half) == 2 && sizeof(bfloat16_t) == 2 && sizeof(complex64_t) == 8, "scalars");
static_assert(sizeof(uint) == 4 && sizeof(ushort) == 2 && sizeof(uchar) == 1 && sizeof(ulong) == 8, "ints");
static_assert(std::is_same<float16_t, half>::value && std::is_same<bfloat, bfloat16_t>::value, "aliases");
static_assert(std::is_same<vec<float, 4>, float4>::value && std::is_same<vec<int, 3>, int3>::value, "vec");
static_assert(std::is_same<decltype(min(1u, 2u)), uint>::value, "min(uint, uint) is uint");
static_assert(std::is_same<decltype(max(short(1), short(2))), short>::value, "max(short, short)");
static_assert(std::is_same<decltype(half(1) + half(2)), half>::value, "half + half is half");
static_assert(std::is_same<decltype(half(1) + 1.0f), float>::value, "half + float is float");
static_assert(std::is_same<decltype(half(1) * 2), half>::value, "half * int is half");
static_assert(std::is_same<decltype(float4(1) < 2.0f), bool4>::value, "comparison gives bool4");
static_assert(std::is_same<decltype(uchar4(1) + uchar4(2)), uchar4>::value, "no promotion");
static_assert(std::is_same<decltype(float4(1).xy), swz<float, 4, 0, 1>>::value, "swizzle proxy");
static_assert(std::is_same<decltype(sqrt(half4(1))), half4>::value, "sqrt(half4)");
static_assert(std::is_same<decltype(length(float3(1))), float>::value, "length");
static_assert(std::is_same<decltype(isnan(float2(1))), bool2>::value, "isnan(float2)");
static_assert(std::is_same<decltype(elem_to_loc(uint(1), (const int*)nullptr, (const int64_t*)nullptr, 1)), uint>::value, "elem_to_loc idx");
#ifdef CN_HAS_BIT_CAST
static_assert(float(half(0.1f)) == 0.0999755859375f, "constexpr half");
constexpr half kh = 3.0f;
static_assert(kh > 2.0f && float(-kh) == -3.0f, "constexpr half ops");
static_assert(float(Limits<half>::finite_max) == 65504.0f, "Limits<half>");
static_assert(cn_detail::bit_cast<ushort>(Limits<half>::finite_max) == 0x7bff &&
              cn_detail::bit_cast<ushort>(Limits<half>::min) == 0xfc00, "Limits");
#endif

int self_checks() {
  float4 v(1.0f, 2.0f, 3.0f, 4.0f);
  // read swizzles
  float2 a = v.xy; CHECK(a.x == 1 && a.y == 2);
  float3 b = v.zyx; CHECK(b.x == 3 && b.y == 2 && b.z == 1);
  float4 c = v.bgra; CHECK(c.x == 3 && c.y == 2 && c.z == 1 && c.w == 4);
  float4 d = v.xxxx; CHECK(all(d == 1.0f));
  float4 ww = v.wzyx; CHECK(ww.x == 4 && ww.w == 1);
  CHECK(v.ar[0] == 4 && v.ar[1] == 1 && v.ar().x == 4);
  float2 q = v.xy * 2.0f + v.zw; CHECK(q.x == 5 && q.y == 8);
  CHECK(dot(v.xyz, float3(1)) == 6);
  // write swizzles
  v.xy = float2(10, 20); CHECK(v.x == 10 && v.y == 20 && v.z == 3 && v.w == 4);
  v.zw += 1; CHECK(v.z == 4 && v.w == 5 && v.x == 10);
  v.wx = v.xw; CHECK(v.w == 10 && v.x == 5);
  float4 w(0.0f); w.yz = v.xy; CHECK(w.x == 0 && w.y == 5 && w.z == 20 && w.w == 0);
  w.xy = w.yx; CHECK(w.x == 5 && w.y == 0);
  w.rgb = float3(7); CHECK(w.x == 7 && w.z == 7 && w.w == 0);
  w.zyx *= float3(1, 2, 3); CHECK(w.x == 21 && w.y == 14 && w.z == 7);
  v.x = 1; v[1] = 2; v.b = 3; v.a = 4; CHECK(v.y == 2 && v.z == 3 && v.w == 4 && v.r == 1);
  uint3 g(1u, 2u, 3u); g.xz = uint2(9u, 8u); CHECK(g.x == 9 && g.y == 2 && g.z == 8);
  int2 i2(1, 2); i2.yx = i2; CHECK(i2.x == 2 && i2.y == 1);
  // constructors
  float4 e(a.xy, b.zy); CHECK(e.x == 1 && e.y == 2 && e.z == 1 && e.w == 2);
  float4 f(b, 7.0f); CHECK(f.x == 3 && f.w == 7);
  float4 f2(1, b.xy, 2.5); CHECK(f2.x == 1 && f2.y == 3 && f2.w == 2.5f);
  float3 g3(a, 5); CHECK(g3.z == 5);
  float4 h(1.5f); CHECK(all(h == 1.5f));
  float4 zero{}; CHECK(all(zero == 0.0f));
  float4 br = {1, 2, 3, 4}; CHECK(br.w == 4);
  int4 iv(1, -2, 3, -4);
  float4 fi = float4(iv); CHECK(fi.y == -2.0f && fi.w == -4.0f);
  int4 back = int4(float4(1.7f, -1.7f, 2.2f, 0.0f)); CHECK(back.x == 1 && back.y == -1);
  half4 hv = half4(float4(1, 2, 3, 4)); CHECK(float(hv.w) == 4);
  float2 fs = float2(v.zw); CHECK(fs.x == 3);
  uint3 u3 = uint3(5); CHECK(u3.z == 5);
  // operators
  int4 m = iv % 2; CHECK(m.x == 1 && m.y == 0);
  int4 sh = iv << 1; CHECK(sh.x == 2 && sh.z == 6);
  uint4 uv(0xf0u); CHECK(all((uv & 0x30u) == 0x30u) && all((uv | 1u) == 0xf1u) && all((uv ^ uv) == 0u));
  CHECK(all((uv >> 4) == 0xfu));
  bool4 cmp = iv > 0; CHECK(cmp.x && !cmp.y && cmp.z && !cmp.w);
  CHECK(any(cmp) && !all(cmp) && all(iv == iv) && !any(iv != iv));
  CHECK(all((iv <= 1) == bool4(true, true, false, true)));
  CHECK(all(-iv == int4(-1, 2, -3, 4)) && all(~iv == int4(~1, ~-2, ~3, ~-4)));
  CHECK(all((!cmp) == bool4(false, true, false, true)));
  float4 s = 2.0f * v + v.xxyy - 1; CHECK(s.x == 2 && s.y == 4 + 1 - 1 && s.w == 8 + 2 - 1);
  float4 dv = v / 2; CHECK(dv.w == 2);
  float4 acc(0.0f); acc += v; acc *= 2; acc -= 1; acc /= 2; CHECK(acc.w == 3.5f);
  int4 ic = iv; ic %= 2; ic <<= 1; ic |= 1; CHECK(ic.x == 3);
  float3 p3 = float3(1, 2, 3); p3++; CHECK(p3.z == 4);
  // packed vectors
  packed_float3 pk(1.0f, 2.0f, 3.0f); float3 pv = pk; CHECK(pv.y == 2 && pk.z == 3 && pk[0] == 1);
  float3 pp = pk + pk; CHECK(pp.z == 6);
  pk += 1.0f; CHECK(pk.x == 2 && pk.b == 4);
  packed_float3 pk2 = float3(4, 5, 6); CHECK(pk2.y == 5);
  // half / bfloat arithmetic
  half hh = 1.5f; CHECK(float(hh * hh) == 2.25f && float(hh + 1) == 2.5f);
  hh += 1.0f; CHECK(hh == 2.5f); hh++; CHECK(hh == 3.5f);
  CHECK(half(1) / half(3) == half(0.333333f));
  CHECK(float(half(65504.0f) * half(2.0f)) == INFINITY);
  CHECK(half(1.0f) < half(2.0f) && half(2.0f) >= 2 && 3.0f > half(2.0f) && half(1) != half(2));
  bfloat16_t bf = 1.0f; CHECK(float(bf + bf) == 2.0f && float(bfloat(3.0f)) == 3.0f);
  CHECK(float(bfloat(1.00390625f)) == 1.0f);  // tie rounds to even
  CHECK(float(bfloat(1.01171875f)) == 1.015625f);
  half4 hw(1.0f, 2.0f, 3.0f, 4.0f); half4 hq = hw * hw; CHECK(float(hq.w) == 16 && float(hq.x) == 1);
  // functions
  CHECK(min(3u, 4u) == 3u && max(-1, 2) == 2 && min(2.0f, 1.0f) == 1.0f);
  CHECK(all(min(v, 3.0f) == float4(1, 2, 3, 3)));
  CHECK(all(max(v.xy, v.zw) == float2(3, 4)));
  CHECK(clamp(5, 0, 3) == 3 && clamp(-5, 0, 3) == 0 && clamp(2u, 0u, 3u) == 2u);
  CHECK(all(clamp(v, 1.5f, 3.5f) == float4(1.5f, 2, 3, 3.5f)));
  CHECK(abs(-3) == 3 && abs(-3.5f) == 3.5f && all(abs(int2(-1, 2)) == int2(1, 2)));
  CHECK(min3(3, 1, 2) == 1 && max3(3, 1, 2) == 3 && median3(3, 1, 2) == 2);
  CHECK(fmin3(3.0f, 1.0f, 2.0f) == 1 && fmax3(3.0f, 1.0f, 2.0f) == 3 && fmedian3(3.0f, 1.0f, 2.0f) == 2);
  float cv; float sv = sincos(0.5f, cv); CHECK(sv == std::sin(0.5f) && cv == std::cos(0.5f));
  float4 c4; float4 s4 = sincos(float4(0.5f), c4); CHECK(s4.y == sv && c4.z == cv);
  CHECK(dot(float3(1, 2, 3), float3(4, 5, 6)) == 32);
  CHECK(all(cross(float3(1, 0, 0), float3(0, 1, 0)) == float3(0, 0, 1)));
  CHECK(length(float2(3, 4)) == 5 && length_squared(float2(3, 4)) == 25);
  CHECK(distance(float2(0, 0), float2(3, 4)) == 5 && distance_squared(float2(1, 1), float2(4, 5)) == 25);
  CHECK(std::fabs(length(normalize(float3(1, 2, 3))) - 1.0f) < 1e-6f);
  CHECK(all(reflect(float2(1, -1), float2(0, 1)) == float2(1, 1)));
  CHECK(all(mix(float4(0), float4(2), 0.25f) == float4(0.5f)) && mix(1.0f, 3.0f, 0.5f) == 2.0f);
  CHECK(step(1.0f, 2.0f) == 1 && step(3.0f, 2.0f) == 0 && smoothstep(0.0f, 1.0f, 0.5f) == 0.5f);
  CHECK(fma(2.0f, 3.0f, 1.0f) == 7 && mad(2.0f, 3.0f, 1.0f) == 7);
  CHECK(fract(-0.25f) == 0.75f && fract(1.0f) == 0.0f && fract(-1e-9f) < 1.0f);
  CHECK(sign(-2.0f) == -1 && sign(0.0f) == 0 && sign(3.0f) == 1);
  CHECK(metal::fast::exp(0.0f) == 1 && metal::precise::sin(0.0f) == 0 && fast::sqrt(4.0f) == 2);
  CHECK(exp10(2.0f) == 100.0f && powr(2.0f, 3.0f) == 8 && divide(1.0f, 4.0f) == 0.25f);
  int e2; float fm = frexp(8.0f, e2); CHECK(fm == 0.5f && e2 == 4);
  float ip; float fp = modf(2.5f, ip); CHECK(fp == 0.5f && ip == 2);
  CHECK(ldexp(1.0f, 3) == 8.0f && all(ldexp(float4(1.0f), int4(1, 2, 3, 4)) == float4(2, 4, 8, 16)));
  CHECK(isnan(NAN) && isinf(INFINITY) && !isfinite(INFINITY) && isfinite(1.0f) && signbit(-0.0f));
  CHECK(all(isnan(float2(NAN, 1)) == bool2(true, false)));
  CHECK(select(1, 2, true) == 2 && select(1.0f, 2.0f, false) == 1.0f);
  CHECK(all(select(float4(0), float4(1), bool4(true, false, true, false)) == float4(1, 0, 1, 0)));
  CHECK(float(sqrt(half(4.0f))) == 2.0f && float(exp(bfloat(0.0f))) == 1.0f);
  CHECK(extract_bits(0xabcdu, 4u, 8u) == 0xbcu && extract_bits(int(0xf0), 4u, 4u) == -1);
  CHECK(insert_bits(0xffffu, 0x0u, 4u, 8u) == 0xf00fu);
  CHECK(mul24(3, 4) == 12 && all(popcount(uint2(3u, 7u)) == uint2(2u, 3u)));
  CHECK(clz(0u) == 32u && ctz(0u) == 32u && clz(ushort(1)) == 15 && popcount(uchar(255)) == 8);
  // as_type
  CHECK(as_type<uint>(1.0f) == 0x3f800000u && as_type<float>(0x40000000u) == 2.0f);
  CHECK(as_type<ushort>(half(1.0f)) == 0x3c00u && as_type<ushort>(bfloat(1.0f)) == 0x3f80u);
  uint2 u2 = as_type<uint2>(ulong(0x100000002ul)); CHECK(u2.x == 2 && u2.y == 1);
  CHECK(as_type<ulong>(uint2(2u, 1u)) == 0x100000002ul && as_type<uint>(half2(1.0f, 0.0f)) == 0x3c00u);
  // numeric limits and constants
  CHECK(Limits<float>::max == INFINITY && Limits<float>::min == -INFINITY);
  CHECK(Limits<float>::finite_max == FLT_MAX && Limits<float>::finite_min == -FLT_MAX);
  CHECK(float(Limits<half>::max) == INFINITY && float(Limits<half>::finite_min) == -65504.0f);
  CHECK(float(Limits<bfloat16_t>::finite_max) == 0x1.fep127f);
  CHECK(Limits<int>::min == -2147483648LL && Limits<uint>::max == 4294967295u);
  CHECK(Limits<int64_t>::max == 9223372036854775807LL && Limits<uint8_t>::max == 255 && Limits<int16_t>::min == -32768);
  CHECK(Limits<bool>::max && !Limits<bool>::min);
  CHECK(std::isinf(Limits<complex64_t>::max.real) && Limits<complex64_t>::min.imag < 0);
  CHECK(float(metal::numeric_limits<half>::epsilon()) == 0x1p-10f && float(metal::numeric_limits<half>::min()) == 0x1p-14f);
  CHECK(float(metal::numeric_limits<half>::denorm_min()) == 0x1p-24f && isnan(float(metal::numeric_limits<half>::quiet_NaN())));
  CHECK(metal::numeric_limits<float>::max() == FLT_MAX);
  CHECK(M_PI_F == 3.14159265f && M_PI_2_F == 1.57079633f && M_PI_4_F == 0.785398163f);
  CHECK(M_1_PI_F == 0.318309886f && M_2_PI_F == 0.636619772f && M_E_F == 2.71828183f);
  CHECK(M_LN2_F == 0.693147181f && M_LN10_F == 2.30258509f && M_LOG2E_F == 1.44269504f);
  CHECK(M_SQRT2_F == 1.41421356f && M_SQRT1_2_F == 0.707106781f && MAXFLOAT == FLT_MAX);
  CHECK(HUGE_VALF == INFINITY && FLT_EPSILON == 0x1p-23f && FLT_MIN == 0x1p-126f && HALF_MAX == 65504.0f);
  CHECK((is_floating_point_v<half> && !is_floating_point_v<int> && is_same_v<uint, uint32_t>));
  // MLX utilities
  CHECK(ceildiv(10, 3) == 4 && ceildiv(9u, 3u) == 3u && ceildiv(size_t(1), 256) == 1);
  {
    int shp[3] = {2, 3, 4}; int64_t str[3] = {12, 4, 1};
    CHECK(elem_to_loc(uint3(1, 2, 1), shp, str, 3) == 12 + 8 + 1);
    CHECK(elem_to_loc_1(uint(5), str[1]) == 20);
    CHECK(elem_to_loc_2(uint2(1, 2), str + 1) == 2 * 4 + 1);
    CHECK(elem_to_loc_3(uint3(1, 2, 1), str) == 12 + 8 + 1);
    int64_t sb[3] = {1, 2, 6};
    long2 l2 = elem_to_loc_2_nd(uint3(3, 2, 1), shp, str, sb, 3);
    CHECK(l2.x == 3 + 8 + 12 && l2.y == 18 + 4 + 1);
    long3 l3 = elem_to_loc_3_nd(uint3(3, 2, 1), shp, str, sb, str, 3);
    CHECK(l3.x == 23 && l3.y == 23 && l3.z == 23);
    CHECK(WorkPerThread<float>::n == 2 && (std::is_same<ConditionalType<true, int, float>::type, int>::value));
  }
  // complex64_t
  complex64_t z(1, 2), y(3, -1);
  CHECK((z * y).real == 5 && (z * y).imag == 5);
  CHECK((z * 2.0f).real == 2 && (2.0f * z).imag == 4 && (z + 1.0f).real == 2 && (1.0f - z).imag == -2);
  CHECK((z / 2.0f).imag == 1 && (-z).real == -1 && (z - y).imag == 3);
  complex64_t za = z; za += y; CHECK(za.real == 4 && za.imag == 1); za *= 2.0f; CHECK(za.real == 8);
  complex64_t zf = 3.0f; CHECK(zf.real == 3 && zf.imag == 0);
  float zr = static_cast<float>(z); CHECK(zr == 1);
  complex64_t zd; CHECK(zd.real == 0 && zd.imag == 0);
  CHECK(z < y && y > z && z <= z && z >= z && z == z && z != y && complex64_t(1, 3) > z);
  return fails;
}
@SPLIT_CHECKS@
int self_checks();

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  dir = argv[1];
  fails += self_checks();
  // half / bfloat conversions
  for (float f : load<float>("conv.f32")) {
    put_raw("half_bits", as_type<ushort>(half(f)));
    put_raw("bf16_bits", as_type<ushort>(bfloat16_t(f)));
    put_raw("half_of_double", as_type<ushort>(half(double(f))));
  }
  for (ushort h : load<ushort>("all.u16")) put_raw("half_to_float", float(as_type<half>(h)));
  // float math
  const auto x = load<float>("x.f32");
  const auto y = load<float>("y.f32");
  for (size_t i = 0; i + 3 < x.size(); i += 4) {
@UNARY@
  }
  for (size_t i = 0; i < x.size(); ++i) {
@BINARY@
    put("mix", mix(x[i], y[i], 0.3f));
    put("clamp", clamp(x[i], -0.5f, y[i]));
    put("smoothstep", smoothstep(-1.0f, 2.0f, x[i]));
    put("fma", fma(x[i], y[i], 0.5f));
    put("half_sin", float(sin(half(x[i]))));
    put("half_add", float(half(x[i]) + half(y[i])));
    put("half_mul", float(half(x[i]) * half(y[i])));
  }
  for (size_t i = 0; i + 2 < x.size(); i += 3) {
    const float3 a(x[i], x[i + 1], x[i + 2]), b(y[i], y[i + 1], y[i + 2]);
    put("dot", dot(a, b));
    put("length", length(a));
    const float3 c = cross(a, b), n = normalize(a);
    for (int k = 0; k < 3; ++k) { put("cross", c[k]); put("normalize", n[k]); }
  }
  // integers
  const auto a = load<uint>("a.u32");
  const auto b = load<uint>("b.u32");
  for (size_t i = 0; i < a.size(); ++i) {
@INT@
  }
  // elem_to_loc: shape/strides/ndim, then flat indices
  {
    const auto meta = load<int64_t>("e2l.i64");
    const int ndim = int(meta[0]);
    std::vector<int> shape(ndim);
    std::vector<int64_t> strides(ndim);
    int64_t total = 1;
    for (int d = 0; d < ndim; ++d) { shape[d] = int(meta[1 + d]); strides[d] = meta[1 + ndim + d]; total *= shape[d]; }
    for (int64_t i = 0; i < total; ++i) {
      put_raw("e2l", elem_to_loc(i, shape.data(), strides.data(), ndim));
      put_raw("e2l_u", int(elem_to_loc(uint(i), shape.data(), strides.data(), ndim)));
      // uint3 form: x = last index, y = second last, z = flat index over the leading dims
      const uint last = uint(i % shape[ndim - 1]), second = uint((i / shape[ndim - 1]) % shape[ndim - 2]);
      const uint rest = uint(i / (int64_t(shape[ndim - 1]) * shape[ndim - 2]));
      put_raw("e2l_3", elem_to_loc(uint3(last, second, rest), shape.data(), strides.data(), ndim));
    }
  }
  // complex64_t
  {
    const auto za = load<complex64_t>("za.c64");
    const auto zb = load<complex64_t>("zb.c64");
    for (size_t i = 0; i < za.size(); ++i) {
      put_raw("cadd", za[i] + zb[i]);
      put_raw("csub", za[i] - zb[i]);
      put_raw("cmul", za[i] * zb[i]);
      put_raw("cdiv", za[i] / zb[i]);
      put_raw("cscale", za[i] * 1.5f);
      put_raw("cneg", -za[i]);
      put_raw("clt", uchar(za[i] < zb[i]));
      put_raw("cge", uchar(za[i] >= zb[i]));
      put_raw("ceq", uchar(za[i] == zb[i]));
    }
  }
  for (auto& kv : outs) {
    FILE* f = std::fopen((dir + "/out_" + kv.first + ".bin").c_str(), "wb");
    std::fwrite(kv.second.data(), 1, kv.second.size(), f);
    std::fclose(f);
  }
  std::printf("fails %d\n", fails);
  return fails ? 1 : 0;
}
"""


def _sources() -> tuple[str, str]:
    """The exercise program as two translation units (self-checks, data runs) built in parallel."""
    text = (
        PROGRAM.replace("@UNARY@", _unary_cases())
        .replace("@BINARY@", _binary_cases())
        .replace("@INT@", _int_cases())
    )
    prelude, rest = text.split("@SPLIT_PRELUDE@")
    io, rest = rest.split("@SPLIT_IO@")
    checks, main = rest.split("@SPLIT_CHECKS@")
    return prelude + checks, prelude + io + main


def _float_inputs(rng: np.random.Generator) -> np.ndarray:
    halves = np.arange(0, 0x7C01, dtype=np.uint16).view(np.float16).astype(np.float64)
    mids = (halves[:-1] + halves[1:]) / 2  # exact ties between neighbouring halves
    vals = [
        halves,
        mids,
        np.nextafter(mids.astype(np.float32), np.float32(np.inf)).astype(np.float64),
        np.nextafter(mids.astype(np.float32), np.float32(-np.inf)).astype(np.float64),
        2.0 ** rng.uniform(-30, 20, 20000) * rng.uniform(1, 2, 20000),
        rng.standard_normal(5000),
        [0.0, np.inf, 65504.0, 65519.0, 65520.0, 65536.0, 1e30, 2.0**-25, 2.0**-26, 2.0**-24 * 1.5],
    ]
    pos = np.concatenate([np.asarray(v, dtype=np.float64) for v in vals]).astype(np.float32)
    return np.concatenate([pos, -pos, np.array([np.nan], dtype=np.float32)])


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Build and run the exercise program once; return the folder with its outputs."""
    cxx = _compiler()
    work = tmp_path_factory.mktemp("metal_types")
    rng = np.random.default_rng(1234)
    _float_inputs(rng).tofile(work / "conv.f32")
    np.arange(65536, dtype=np.uint16).tofile(work / "all.u16")
    x = rng.uniform(-3, 3, 2000).astype(np.float32)
    x[:8] = [0.0, -0.0, 0.5, -0.5, 1.5, 2.5, -2.5, 1.0]
    y = rng.uniform(-3, 3, 2000).astype(np.float32)
    x.tofile(work / "x.f32")
    y.tofile(work / "y.f32")
    a = rng.integers(0, 2**32, 3000, dtype=np.uint64).astype(np.uint32)
    b = rng.integers(0, 2**32, 3000, dtype=np.uint64).astype(np.uint32)
    a[:6] = [0, 1, 0xFFFFFFFF, 0x80000000, 0x7FFFFFFF, 12345]
    b[:6] = [0, 0xFFFFFFFF, 0xFFFFFFFF, 0x80000000, 1, 31]
    a.tofile(work / "a.u32")
    b.tofile(work / "b.u32")
    base = np.arange(5 * 6 * 7 * 4).reshape(5, 6, 7, 4)
    view = base[::-2, 1:5, ::3, ::-1]  # negative and non-unit strides
    itemsize = base.itemsize
    meta = [view.ndim, *view.shape, *(s // itemsize for s in view.strides)]
    np.asarray(meta, dtype=np.int64).tofile(work / "e2l.i64")
    za = (rng.standard_normal(500) + 1j * rng.standard_normal(500)).astype(np.complex64)
    zb = (rng.standard_normal(500) + 1j * rng.standard_normal(500)).astype(np.complex64)
    zb[:10] = za[:10]  # equal pairs for the comparisons
    zb[10:20] = za[10:20].real + 1j * rng.standard_normal(10)  # equal real parts
    za.tofile(work / "za.c64")
    zb.tofile(work / "zb.c64")

    # half_flags: how kernels compile `half` (16-bit rounding after every operation; GCC 13
    # otherwise computes _Float16 in float, and the half checks below fail).
    from cunumpy.emulation import _build, find_compiler

    flags = ["-std=c++17", "-O0", "-Wall", "-Wextra", "-Wshadow", f"-I{RUNTIME}",
             *_build.half_flags(find_compiler())]
    start = time.perf_counter()
    jobs = []
    for i, text in enumerate(_sources()):
        src = work / f"exercise{i}.cpp"
        src.write_text(text)
        cmd = [*cxx, *flags, "-c", str(src), "-o", str(work / f"exercise{i}.o")]
        jobs.append(
            subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        )
    for job in jobs:
        _, err = job.communicate()
        assert job.returncode == 0, err[-6000:]
        # GCC 13 warns about float -> half conversions, which Metal makes implicitly.
        warnings = [ln for ln in err.splitlines()
                    if "warning" in ln and "with greater conversion rank" not in ln]
        assert not warnings, err[-6000:]
    exe = work / "exercise"
    objs = [str(work / f"exercise{i}.o") for i in range(len(jobs))]
    link = subprocess.run(
        [*cxx, *objs, "-o", str(exe)], capture_output=True, text=True, check=False
    )
    assert link.returncode == 0, link.stderr[-4000:]
    print(f"exercise program built in {time.perf_counter() - start:.2f} s")
    done = subprocess.run([str(exe), str(work)], capture_output=True, text=True, check=False)
    (work / "stdout.txt").write_text(done.stdout)
    (work / "returncode.txt").write_text(str(done.returncode))
    return work


def _out(run: Path, name: str, dtype: type) -> np.ndarray:
    return np.fromfile(run / f"out_{name}.bin", dtype=dtype)


def test_self_checks_pass(run: Path) -> None:
    text = (run / "stdout.txt").read_text()
    failures = [line for line in text.splitlines() if line.startswith("FAIL")]
    assert not failures, "\n".join(failures)
    assert (run / "returncode.txt").read_text() == "0", text


def test_half_rounding_matches_numpy(run: Path) -> None:
    f = np.fromfile(run / "conv.f32", dtype=np.float32)
    got = _out(run, "half_bits", np.uint16)
    with np.errstate(over="ignore"):
        want = f.astype(np.float16).view(np.uint16)
    nan = np.isnan(f)
    assert np.all(np.isnan(got[nan].view(np.float16)))
    bad = np.nonzero(got[~nan] != want[~nan])[0]
    assert bad.size == 0, [
        (float(f[~nan][i]), hex(got[~nan][i]), hex(want[~nan][i])) for i in bad[:10]
    ]
    got_d = _out(run, "half_of_double", np.uint16)
    assert np.array_equal(got_d[~nan], want[~nan])


def test_half_to_float_all_patterns(run: Path) -> None:
    got = _out(run, "half_to_float", np.float32)
    want = np.arange(65536, dtype=np.uint16).view(np.float16).astype(np.float32)
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    assert np.array_equal(got[~nan].view(np.uint32), want[~nan].view(np.uint32))


def test_bfloat16_rounding(run: Path) -> None:
    f = np.fromfile(run / "conv.f32", dtype=np.float32)
    got = _out(run, "bf16_bits", np.uint16)
    nan = np.isnan(f)
    want = _bf16_reference(f)
    assert np.array_equal(got[~nan], want[~nan])
    as_f32 = (got[nan].astype(np.uint32) << 16).view(np.float32)
    assert np.all(np.isnan(as_f32))


def _np_unary(name: str, x: np.ndarray) -> np.ndarray:
    d = x.astype(np.float64)
    table = {
        "rsqrt": lambda v: 1 / np.sqrt(v),
        "exp10": lambda v: 10.0**v,
        "sinpi": lambda v: np.sin(np.pi * v),
        "cospi": lambda v: np.cos(np.pi * v),
        "tanpi": lambda v: np.tan(np.pi * v),
        "round": lambda v: np.sign(v) * np.floor(np.abs(v) + 0.5),
        "fract": lambda v: np.minimum(v - np.floor(v), np.float64(np.float32(1) - np.float32(2**-24))),
        "saturate": lambda v: np.clip(v, 0, 1),
        "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "asinh": np.arcsinh,
        "acosh": np.arccosh, "atanh": np.arctanh, "abs": np.abs,
        "asinpi": lambda v: np.arcsin(v) / np.pi, "acospi": lambda v: np.arccos(v) / np.pi,
        "atanpi": lambda v: np.arctan(v) / np.pi, "logb": lambda v: np.floor(np.log2(np.abs(v))),
    }  # fmt: skip
    fn = table.get(name) or getattr(np, name)
    with np.errstate(all="ignore"):
        return fn(d)


def test_unary_math_matches_numpy(run: Path) -> None:
    x = np.fromfile(run / "x.f32", dtype=np.float32)
    for name in UNARY:
        got = _out(run, name, np.float32).astype(np.float64)
        want = _np_unary(name, x)
        # tanpi near odd multiples of 1/2 is ill-conditioned: compare where it is tame
        mask = np.isfinite(want) & (np.abs(want) < 1e6)
        assert np.array_equal(np.isnan(got), np.isnan(want)), name
        np.testing.assert_allclose(got[mask], want[mask], rtol=3e-6, atol=2e-6, err_msg=name)


def test_binary_math_matches_numpy(run: Path) -> None:
    x = np.fromfile(run / "x.f32", dtype=np.float32).astype(np.float64)
    y = np.fromfile(run / "y.f32", dtype=np.float32).astype(np.float64)
    with np.errstate(all="ignore"):
        ref = {
            "pow": np.power(x, y), "atan2": np.arctan2(x, y), "fmin": np.fmin(x, y),
            "fmax": np.fmax(x, y), "min": np.fmin(x, y), "max": np.fmax(x, y),
            "fmod": np.fmod(x, y), "copysign": np.copysign(x, y), "hypot": np.hypot(x, y),
            "step": np.where(y < x, 0.0, 1.0), "remainder": x - y * np.round(x / y),
            "fdim": np.maximum(x - y, 0), "mix": x + (y - x) * 0.3,
            "atan2pi": np.arctan2(x, y) / np.pi,
            "clamp": np.minimum(np.maximum(x, -0.5), y),
            "fma": x * y + 0.5,
            "smoothstep": (lambda t: t * t * (3 - 2 * t))(np.clip((x + 1) / 3, 0, 1)),
        }  # fmt: skip
    for name, want in ref.items():
        got = _out(run, name, np.float32).astype(np.float64)
        assert np.array_equal(np.isnan(got), np.isnan(want)), name
        ok = ~np.isnan(want)
        np.testing.assert_allclose(got[ok], want[ok], rtol=3e-6, atol=2e-6, err_msg=name)


def test_half_math_rounds_like_numpy(run: Path) -> None:
    x = np.fromfile(run / "x.f32", dtype=np.float32)
    y = np.fromfile(run / "y.f32", dtype=np.float32)
    hx, hy = x.astype(np.float16), y.astype(np.float16)
    np.testing.assert_array_equal(_out(run, "half_add", np.float32), (hx + hy).astype(np.float32))
    np.testing.assert_array_equal(_out(run, "half_mul", np.float32), (hx * hy).astype(np.float32))
    want = np.sin(hx.astype(np.float32)).astype(np.float16).astype(np.float32)
    np.testing.assert_allclose(_out(run, "half_sin", np.float32), want, rtol=1e-3, atol=1e-3)


def test_geometry_matches_numpy(run: Path) -> None:
    x = np.fromfile(run / "x.f32", dtype=np.float32).astype(np.float64)
    y = np.fromfile(run / "y.f32", dtype=np.float32).astype(np.float64)
    n = (x.size // 3) * 3
    a, b = x[:n].reshape(-1, 3), y[:n].reshape(-1, 3)
    np.testing.assert_allclose(_out(run, "dot", np.float32), (a * b).sum(1), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(
        _out(run, "length", np.float32), np.linalg.norm(a, axis=1), rtol=1e-6
    )
    np.testing.assert_allclose(
        _out(run, "cross", np.float32).reshape(-1, 3), np.cross(a, b), rtol=1e-5, atol=1e-5
    )
    unit = a / np.linalg.norm(a, axis=1, keepdims=True)
    np.testing.assert_allclose(
        _out(run, "normalize", np.float32).reshape(-1, 3), unit, rtol=1e-5, atol=1e-6
    )


def _bits_reverse(a: np.ndarray) -> np.ndarray:
    out = np.zeros_like(a)
    for i in range(32):
        out |= ((a >> np.uint32(i)) & np.uint32(1)) << np.uint32(31 - i)
    return out


def test_integer_intrinsics(run: Path) -> None:
    a = np.fromfile(run / "a.u32", dtype=np.uint32)
    b = np.fromfile(run / "b.u32", dtype=np.uint32)
    a64, b64 = a.astype(np.uint64), b.astype(np.uint64)
    sa, sb = a.view(np.int32).astype(np.int64), b.view(np.int32).astype(np.int64)

    def bitlen(v: int) -> int:
        return int(v).bit_length()

    popc = np.array([bin(int(v)).count("1") for v in a], dtype=np.uint32)
    clz = np.array([32 - bitlen(v) for v in a], dtype=np.uint32)
    ctz = np.array(
        [32 if v == 0 else (int(v) & -int(v)).bit_length() - 1 for v in a], dtype=np.uint32
    )
    k = b64 % 32
    rot = ((a64 << k) | (a64 >> ((32 - k) % 32))) & 0xFFFFFFFF
    rot = np.where(k == 0, a64, rot)
    ref_u = {
        "popcount": popc,
        "clz": clz,
        "ctz": ctz,
        "reverse_bits": _bits_reverse(a),
        "mulhi": ((a64 * b64) >> np.uint64(32)),
        "rotate": rot,
        "hadd": (a64 + b64) >> np.uint64(1),
        "rhadd": (a64 + b64 + np.uint64(1)) >> np.uint64(1),
        "absdiff": np.where(a64 > b64, a64 - b64, b64 - a64),
    }
    for name, want in ref_u.items():
        np.testing.assert_array_equal(
            _out(run, name, np.uint32), want.astype(np.uint32), err_msg=name
        )
    lo, hi = -(2**31), 2**31 - 1
    ref_s = {
        "add_sat": np.clip(sa + sb, lo, hi),
        "sub_sat": np.clip(sa - sb, lo, hi),
        "mulhi_s": (sa * sb) >> 32,
        "hadd_s": (sa + sb) >> 1,
        "rhadd_s": (sa + sb + 1) >> 1,
    }
    for name, want in ref_s.items():
        np.testing.assert_array_equal(
            _out(run, name, np.int32), want.astype(np.int32), err_msg=name
        )


def test_elem_to_loc_matches_numpy_strides(run: Path) -> None:
    base = np.arange(5 * 6 * 7 * 4).reshape(5, 6, 7, 4)
    view = base[::-2, 1:5, ::3, ::-1]
    # offset of each element (row-major order) from the view's first element, in elements
    start = view.flat[0]
    want = view.reshape(-1) - start
    np.testing.assert_array_equal(_out(run, "e2l", np.int64), want)
    np.testing.assert_array_equal(_out(run, "e2l_3", np.int64), want)
    # with a uint index MLX's template computes in uint: negative offsets wrap modulo 2**32
    np.testing.assert_array_equal(_out(run, "e2l_u", np.int32), want.astype(np.int32))


def test_complex64_matches_numpy(run: Path) -> None:
    za = np.fromfile(run / "za.c64", dtype=np.complex64)
    zb = np.fromfile(run / "zb.c64", dtype=np.complex64)
    tol = {"rtol": 2e-6, "atol": 1e-6}
    np.testing.assert_allclose(_out(run, "cadd", np.complex64), za + zb, **tol)
    np.testing.assert_allclose(_out(run, "csub", np.complex64), za - zb, **tol)
    np.testing.assert_allclose(_out(run, "cmul", np.complex64), za * zb, **tol)
    np.testing.assert_allclose(_out(run, "cdiv", np.complex64), za / zb, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(_out(run, "cscale", np.complex64), za * np.float32(1.5), **tol)
    np.testing.assert_array_equal(_out(run, "cneg", np.complex64), -za)
    # NumPy orders complex numbers lexicographically (real, then imaginary), like MLX
    np.testing.assert_array_equal(_out(run, "clt", np.uint8), (za < zb).astype(np.uint8))
    np.testing.assert_array_equal(_out(run, "cge", np.uint8), (za >= zb).astype(np.uint8))
    np.testing.assert_array_equal(_out(run, "ceq", np.uint8), (za == zb).astype(np.uint8))
