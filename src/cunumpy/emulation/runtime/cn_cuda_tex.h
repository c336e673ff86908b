// cunumpy CPU emulation: texture objects (cudaTextureObject_t) and their fetches.
//
// The handle a kernel gets is the address of a CnTexture descriptor that the engine made from a
// cunumpy Texture (emulation/_cuda_texture.py writes the same layout). Fetches follow the CUDA
// programming guide's texture fetching rules: point sampling reads texel floor(x); linear
// filtering reads the 2, 4 or 8 texels around x - 0.5 with weights alpha, 1 - alpha where
// alpha is kept in 9-bit fixed point (8 fractional bits, ties rounded up) as the hardware does
// (2-D corner weights as measured on an H200, see tex_sample); normalised
// coordinates are scaled by the size; wrap, clamp, mirror and border address modes apply per
// dimension; normalised-float reads map 8/16-bit integers to [0, 1] or [-1, 1].
#ifndef CN_CUDA_TEX_H
#define CN_CUDA_TEX_H

#include <cmath>
#include <cstring>
#include <type_traits>

typedef unsigned long long cudaTextureObject_t;

namespace cn {
namespace cuda {

constexpr uint64_t kTexMagic = 0x58455454434e4e43ull;  // "CNNCTTEX"

struct CnTexture {
  uint64_t magic;
  const unsigned char* data;
  int64_t size[3];  // width, height, depth (texels)
  int32_t ndim, channels, bytes, kind;  // kind: 0 float, 1 signed, 2 unsigned
  int32_t filter, normalized, read_norm, linear;
  int32_t address[3];  // 0 wrap, 1 clamp, 2 mirror, 3 border
  int32_t pad;
  float border[4];
};

__attribute__((noinline, cold)) inline const CnTexture* bad_texture(const char* what, int line,
                                                                   const char* file, const char* why) {
  fail_fatal(ERR_INTERNAL, line, file, "%s: %s", what, why);
  static CnTexture none{};
  return &none;
}

inline const CnTexture* texture_of(cudaTextureObject_t t, const char* what, int line,
                                   const char* file) {
  const CnTexture* d = reinterpret_cast<const CnTexture*>(t);
  if (!d || d->magic != kTexMagic)
    return bad_texture(what, line, file, "the argument is not a texture object (pass a cunumpy "
                                         "Texture for the cudaTextureObject_t parameter)");
  return d;
}

// Channel c of texel `index` (linear): as a float (float texels, normalised reads) or raw.
inline double texel_value(const CnTexture* d, int64_t index, int c, bool as_float) {
  const unsigned char* p = d->data + (index * d->channels + c) * d->bytes;
  if (d->kind == 0) {
    if (d->bytes == 2) { _Float16 h; std::memcpy(&h, p, 2); return double(float(h)); }
    float f; std::memcpy(&f, p, 4); return double(f);
  }
  int64_t v;
  if (d->kind == 1) {
    if (d->bytes == 1) { int8_t x; std::memcpy(&x, p, 1); v = x; }
    else if (d->bytes == 2) { int16_t x; std::memcpy(&x, p, 2); v = x; }
    else { int32_t x; std::memcpy(&x, p, 4); v = x; }
  } else {
    if (d->bytes == 1) { uint8_t x; std::memcpy(&x, p, 1); v = x; }
    else if (d->bytes == 2) { uint16_t x; std::memcpy(&x, p, 2); v = x; }
    else { uint32_t x; std::memcpy(&x, p, 4); v = x; }
  }
  if (as_float && d->read_norm) {
    double top = double((int64_t(1) << (8 * d->bytes - (d->kind == 1 ? 1 : 0))) - 1);
    double f = double(float(v) / float(top));
    return f < -1.0 ? -1.0 : f;
  }
  return double(v);
}

// The texel index an address mode gives coordinate i of dimension k, or -1 (the border).
inline int64_t tex_address(const CnTexture* d, int k, int64_t i) {
  int64_t n = d->size[k];
  if (i >= 0 && i < n) return i;
  switch (d->address[k]) {
    case 0: { int64_t m = i % n; return m < 0 ? m + n : m; }
    case 2: {
      int64_t m = i % (2 * n);
      if (m < 0) m += 2 * n;
      return m < n ? m : 2 * n - 1 - m;
    }
    case 3: return -1;
    default: return i < 0 ? 0 : n - 1;
  }
}

inline void tex_tap(const CnTexture* d, const int64_t* at, bool as_float, double* out) {
  int64_t index = 0, stride = 1;
  for (int k = 0; k < d->ndim; ++k) {
    int64_t i = tex_address(d, k, at[k]);
    if (i < 0) {
      for (int c = 0; c < d->channels; ++c) out[c] = as_float ? double(d->border[c]) : 0.0;
      return;
    }
    index += i * stride;
    stride *= d->size[k];
  }
  for (int c = 0; c < d->channels; ++c) out[c] = texel_value(d, index, c, as_float);
}

inline void tex_sample(const CnTexture* d, const float* coord, bool as_float, double* out) {
  for (int c = 0; c < 4; ++c) out[c] = 0.0;
  if (d->filter == 0 || !as_float) {
    int64_t at[3] = {0, 0, 0};
    for (int k = 0; k < d->ndim; ++k) {
      float x = d->normalized ? coord[k] * float(d->size[k]) : coord[k];
      at[k] = int64_t(std::floor(x));
    }
    tex_tap(d, at, as_float, out);
    return;
  }
  int64_t base[3] = {0, 0, 0};
  int alpha[3] = {0, 0, 0};  // weights of the upper texels in 1/256 (9-bit fixed point, 0..256)
  for (int k = 0; k < d->ndim; ++k) {
    float x = (d->normalized ? coord[k] * float(d->size[k]) : coord[k]) - 0.5f;
    float f = std::floor(x);
    base[k] = int64_t(f);
    alpha[k] = int(std::floor(double(x - f) * 256.0 + 0.5));  // ties round up, as on an H200
  }
  // Corner weights in 1/256. Measured on an H200: in 2-D the upper-upper weight is
  // ax * ay / 256 rounded half up and the others make each row and column sum to ax, ay.
  // 3-D (not measured) takes the products of the three weights.
  double weight[8];
  if (d->ndim == 2) {
    int q = (alpha[0] * alpha[1] + 128) >> 8;
    weight[0] = 256 - alpha[0] - alpha[1] + q;
    weight[1] = alpha[0] - q;
    weight[2] = alpha[1] - q;
    weight[3] = q;
  }
  for (int corner = 0; corner < (1 << d->ndim); ++corner) {
    double w = 1.0;
    for (int k = 0; k < d->ndim; ++k) {
      bool hi = (corner >> k) & 1;
      w *= (hi ? alpha[k] : 256 - alpha[k]) / 256.0;
    }
    if (d->ndim != 2) weight[corner] = w * 256.0;
  }
  double tap[4];
  for (int corner = 0; corner < (1 << d->ndim); ++corner) {
    int64_t at[3];
    for (int k = 0; k < d->ndim; ++k) at[k] = base[k] + ((corner >> k) & 1);
    tex_tap(d, at, true, tap);
    for (int c = 0; c < d->channels; ++c) out[c] += weight[corner] / 256.0 * tap[c];
  }
}

template <class T, class = void>
struct tex_comp { using C = T; static constexpr int N = 1; };
template <class T>
struct tex_comp<T, std::void_t<decltype(std::declval<T&>().x)>> {
  using C = std::remove_reference_t<decltype(std::declval<T&>().x)>;
  static constexpr int N = int(sizeof(T) / sizeof(C));
};

template <class T>
inline T tex_result(const double* v) {
  using C = typename tex_comp<T>::C;
  constexpr int N = tex_comp<T>::N;
  C comps[N];
  for (int c = 0; c < N; ++c) {
    if constexpr (std::is_floating_point<C>::value || std::is_same<C, _Float16>::value) {
      comps[c] = C(float(v[c]));
    } else {
      comps[c] = C(int64_t(v[c]));
    }
  }
  T r;
  static_assert(sizeof(T) == sizeof(comps), "texel type");
  std::memcpy(&r, comps, sizeof(T));
  return r;
}

template <class T>
constexpr bool tex_float_result() {
  using C = typename tex_comp<T>::C;
  return std::is_floating_point<C>::value || std::is_same<C, _Float16>::value;
}

template <class T>
inline T tex_fetch(cudaTextureObject_t t, const float* coord, int dims, bool linear_fetch,
                   const char* what, int line, const char* file) {
  const CnTexture* d = texture_of(t, what, line, file);
  if (!d->magic) return T{};
  if (bool(d->linear) != linear_fetch)
    bad_texture(what, line, file, linear_fetch
                ? "tex1Dfetch reads linear-memory textures; this one is a CUDA array "
                  "(Texture(..., memory='linear'))"
                : "this texture is linear memory (1-D data): read it with tex1Dfetch, or make "
                  "it a CUDA array (Texture(..., memory='array'))");
  else if (d->ndim != dims)
    bad_texture(what, line, file, "the texture's number of dimensions does not match the fetch");
  double v[4];
  constexpr bool as_float = tex_float_result<T>();
  if (linear_fetch) {
    int64_t i = int64_t(coord[0]);
    for (int c = 0; c < 4; ++c) v[c] = 0.0;
    if (i >= 0 && i < d->size[0])
      for (int c = 0; c < d->channels; ++c) v[c] = texel_value(d, i, c, as_float);
  } else {
    tex_sample(d, coord, as_float, v);
  }
  return tex_result<T>(v);
}

}  // namespace cuda
}  // namespace cn

#define CN_TEX_SITE int cn_line = __builtin_LINE(), const char* cn_file = __builtin_FILE()

template <class T>
inline T tex1Dfetch(cudaTextureObject_t t, int x, CN_TEX_SITE) {
  float c[1] = {float(x)};
  return ::cn::cuda::tex_fetch<T>(t, c, 1, true, "tex1Dfetch", cn_line, cn_file);
}
template <class T>
inline T tex1D(cudaTextureObject_t t, float x, CN_TEX_SITE) {
  float c[1] = {x};
  return ::cn::cuda::tex_fetch<T>(t, c, 1, false, "tex1D", cn_line, cn_file);
}
template <class T>
inline T tex2D(cudaTextureObject_t t, float x, float y, CN_TEX_SITE) {
  float c[2] = {x, y};
  return ::cn::cuda::tex_fetch<T>(t, c, 2, false, "tex2D", cn_line, cn_file);
}
template <class T>
inline T tex3D(cudaTextureObject_t t, float x, float y, float z, CN_TEX_SITE) {
  float c[3] = {x, y, z};
  return ::cn::cuda::tex_fetch<T>(t, c, 3, false, "tex3D", cn_line, cn_file);
}
template <class T>
inline T tex1DLod(cudaTextureObject_t t, float x, float, CN_TEX_SITE) { return tex1D<T>(t, x, cn_line, cn_file); }
template <class T>
inline T tex2DLod(cudaTextureObject_t t, float x, float y, float, CN_TEX_SITE) {
  return tex2D<T>(t, x, y, cn_line, cn_file);
}
template <class T>
inline T tex3DLod(cudaTextureObject_t t, float x, float y, float z, float, CN_TEX_SITE) {
  return tex3D<T>(t, x, y, z, cn_line, cn_file);
}
// The forms that write through a pointer.
template <class T>
inline void tex1Dfetch(T* r, cudaTextureObject_t t, int x, CN_TEX_SITE) { *r = tex1Dfetch<T>(t, x, cn_line, cn_file); }
template <class T>
inline void tex1D(T* r, cudaTextureObject_t t, float x, CN_TEX_SITE) { *r = tex1D<T>(t, x, cn_line, cn_file); }
template <class T>
inline void tex2D(T* r, cudaTextureObject_t t, float x, float y, CN_TEX_SITE) {
  *r = tex2D<T>(t, x, y, cn_line, cn_file);
}
template <class T>
inline void tex3D(T* r, cudaTextureObject_t t, float x, float y, float z, CN_TEX_SITE) {
  *r = tex3D<T>(t, x, y, z, cn_line, cn_file);
}
#undef CN_TEX_SITE

#endif  // CN_CUDA_TEX_H
