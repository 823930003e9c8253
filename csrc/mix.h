/*
 * mix.h -- the SplitMix64 finalizer: 64 bits mixed into 64 (internal). The simulator's
 * randomness (rng.h) and the hash tables of the line-protocol scan (lp_scan.c) and of
 * the series grouping (series_group.c) use it.
 */
#ifndef TS_MIX_H
#define TS_MIX_H

#include <stdint.h>

static inline uint64_t ts_mix64(uint64_t z)
{
    z ^= z >> 30;
    z *= UINT64_C(0xbf58476d1ce4e5b9);
    z ^= z >> 27;
    z *= UINT64_C(0x94d049bb133111eb);
    z ^= z >> 31;
    return z;
}

#endif
