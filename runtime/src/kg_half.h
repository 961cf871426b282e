/*
** kg_half.h -- f16 and bf16 <-> f32 conversions for the C backend.
** Storage is the IEEE bit pattern in a uint16_t. f32 -> f16/bf16 rounds to
** nearest even; NaN stays NaN (quiet), overflow goes to infinity.
*/
#ifndef KG_HALF_H
#define KG_HALF_H

#include <stdint.h>
#include <string.h>

static inline uint32_t kg__f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline float kg__bits_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

static inline float kg_bf16_to_f32(uint16_t h) { return kg__bits_f32((uint32_t)h << 16); }

static inline uint16_t kg_f32_to_bf16(float f) {
  uint32_t u = kg__f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u); /* quiet NaN */
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

static inline float kg_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
  if (exp == 0x1fu) return kg__bits_f32(sign | 0x7f800000u | (man << 13));
  if (exp == 0) {                      /* zero or subnormal: man * 2^-24 */
    float f = (float)man * 5.9604644775390625e-8f;
    return sign ? -f : f;
  }
  return kg__bits_f32(sign | ((exp + 112u) << 23) | (man << 13));
}

static inline uint16_t kg_f32_to_f16(float f) {
  uint32_t u = kg__f32_bits(f);
  uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u);     /* NaN */
  if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);    /* rounds to >= 65520: inf */
  if (a < 0x38800000u) {                                      /* below 2^-14: subnormal */
    /* adding 0.5 makes the FPU round the value to a multiple of 2^-24 (RNE) */
    float r = kg__bits_f32(a) + 0.5f;
    return (uint16_t)(sign | (uint16_t)(kg__f32_bits(r) - 0x3f000000u));
  }
  a += ((uint32_t)(15 - 127) << 23) + 0xfffu + ((a >> 13) & 1u);
  return (uint16_t)(sign | (uint16_t)(a >> 13));
}

#endif /* KG_HALF_H */
