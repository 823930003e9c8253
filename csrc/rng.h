/*
 * rng.h -- counter-based randomness for the simulator (internal).
 *
 * A stream is a 64-bit key derived from (seed, entity, series, slot); a draw
 * is mix(key + tick * G1 + j * G2): a pure function of its coordinates, so any
 * split of the work yields the same numbers.
 */
#ifndef TS_RNG_H
#define TS_RNG_H

#include <math.h>
#include <stdint.h>

#include "mix.h"

#define TS_ZIG_LAYERS 128

static inline uint64_t ts_stream_key(uint64_t seed, int64_t entity, int64_t series, int64_t slot)
{
    uint64_t k = ts_mix64(seed ^ UINT64_C(0x5851f42d4c957f2d));
    k = ts_mix64(k + (uint64_t)entity * UINT64_C(0x9e3779b97f4a7c15));
    k = ts_mix64(k + (uint64_t)series * UINT64_C(0xc2b2ae3d27d4eb4f));
    return ts_mix64(k + (uint64_t)slot * UINT64_C(0x165667b19e3779f9));
}

#define TS_TICK_STRIDE UINT64_C(0x9e3779b97f4a7c15)

static inline uint64_t ts_draw(uint64_t key, uint64_t tick, uint64_t j)
{
    return ts_mix64(key + tick * TS_TICK_STRIDE + j * UINT64_C(0xd1b54a32d192ed03));
}

/* uniform in [0, 1) with 53 random bits (r >> 11 < 2^53: converted as signed, the
 * same double) */
static inline double ts_u01(uint64_t r)
{
    return (double)(int64_t)(r >> 11) * 0x1.0p-53;
}

/* 2 * ts_u01(r) - 1, uniform in [-1, 1): the same bits, as both products by powers
 * of two are exact */
static inline double ts_u11(uint64_t r)
{
    return (double)(int64_t)(r >> 11) * 0x1.0p-52 - 1.0;
}

/* Ziggurat tables for the standard normal (Marsaglia & Tsang; 128 layers) */
typedef struct ts_zig {
    double x[TS_ZIG_LAYERS + 1];
    double ratio[TS_ZIG_LAYERS];
} ts_zig;

static void ts_zig_init(ts_zig *z)
{
    const double r = 3.442619855899, v = 9.91256303526217e-3;
    double f = exp(-0.5 * r * r);
    z->x[0] = v / f;
    z->x[1] = r;
    z->x[TS_ZIG_LAYERS] = 0.0;
    for (int i = 2; i < TS_ZIG_LAYERS; i++) {
        z->x[i] = sqrt(-2.0 * log(v / z->x[i - 1] + f));
        f = exp(-0.5 * z->x[i] * z->x[i]);
    }
    for (int i = 0; i < TS_ZIG_LAYERS; i++)
        z->ratio[i] = z->x[i + 1] / z->x[i];
}

/* a standard normal draw from stream key at tick; j counts the draws used */
static double ts_normal_slow(const ts_zig *z, uint64_t key, uint64_t tick, uint64_t r);

/* the same from r = ts_draw(key, tick, 0), already drawn */
static inline double ts_normal_of(const ts_zig *z, uint64_t key, uint64_t tick, uint64_t r)
{
    unsigned i = (unsigned)(r & (TS_ZIG_LAYERS - 1));
    double u = ts_u11(r);
    if (fabs(u) < z->ratio[i])
        return u * z->x[i];
    return ts_normal_slow(z, key, tick, r);
}

static inline double ts_normal(const ts_zig *z, uint64_t key, uint64_t tick)
{
    return ts_normal_of(z, key, tick, ts_draw(key, tick, 0));
}

static double ts_normal_slow(const ts_zig *z, uint64_t key, uint64_t tick, uint64_t r)
{
    const double R = 3.442619855899;
    for (uint64_t j = 16;; j += 4) {
        unsigned i = (unsigned)(r & (TS_ZIG_LAYERS - 1));
        double u = ts_u11(r);
        if (fabs(u) < z->ratio[i])
            return u * z->x[i];
        if (i == 0) {
            /* the tail beyond R */
            for (uint64_t k = j;; k += 2) {
                double a = log(1.0 - ts_u01(ts_draw(key, tick, k))) / R;
                double b = log(1.0 - ts_u01(ts_draw(key, tick, k + 1)));
                if (-2.0 * b >= a * a)
                    return u < 0 ? a - R : R - a;
            }
        }
        double xx = u * z->x[i];
        double f0 = exp(-0.5 * (z->x[i] * z->x[i] - xx * xx));
        double f1 = exp(-0.5 * (z->x[i + 1] * z->x[i + 1] - xx * xx));
        if (f1 + ts_u01(ts_draw(key, tick, j + 1)) * (f0 - f1) < 1.0)
            return xx;
        r = ts_draw(key, tick, j + 2);
    }
}

#endif
