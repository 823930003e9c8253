/*
 * fmt_int.h -- integer to decimal text, two digits at a time (internal).
 */
#ifndef TS_FMT_INT_H
#define TS_FMT_INT_H

#include <stdint.h>
#include <string.h>

static const char ts_digit_pairs[201] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

/* the four digits of i < 10^4 at ts_digit_quads + 4 * i (in fmt_double.c) */
extern const char ts_digit_quads[40001];

static inline int ts_count_digits(uint64_t v)
{
    static const uint64_t pow10[20] = {
        UINT64_C(1), UINT64_C(10), UINT64_C(100), UINT64_C(1000), UINT64_C(10000), UINT64_C(100000),
        UINT64_C(1000000), UINT64_C(10000000), UINT64_C(100000000), UINT64_C(1000000000),
        UINT64_C(10000000000), UINT64_C(100000000000), UINT64_C(1000000000000),
        UINT64_C(10000000000000), UINT64_C(100000000000000), UINT64_C(1000000000000000),
        UINT64_C(10000000000000000), UINT64_C(100000000000000000), UINT64_C(1000000000000000000),
        UINT64_C(10000000000000000000)};
    /* log10 from the bit length, then one correction */
    uint64_t w = v | 1;   /* 0 has one digit; the low bit never changes the count */
    int t = ((64 - __builtin_clzll(w)) * 1233) >> 12;
    return t + (w >= pow10[t]);
}

/* writes v in decimal, returns the length */
static inline size_t ts_fmt_u64(uint64_t v, char *out)
{
    int n = ts_count_digits(v);
    char *p = out + n;
    while (v >= 100) {
        unsigned d = (unsigned)(v % 100) * 2;
        v /= 100;
        *--p = ts_digit_pairs[d + 1];
        *--p = ts_digit_pairs[d];
    }
    if (v >= 10) {
        unsigned d = (unsigned)v * 2;
        *--p = ts_digit_pairs[d + 1];
        *--p = ts_digit_pairs[d];
    } else {
        *--p = (char)('0' + v);
    }
    return (size_t)n;
}

/* the hot-path writer: the digits go straight to their place (no scratch
 * copy, whose wide re-read of narrow stores would stall), four then two at a
 * time from the end; 32-bit arithmetic below 2^32 */
static inline size_t ts_fmt_u64_wide(uint64_t v, char *out)
{
    int n = ts_count_digits(v);
    char *p = out + n;
    while (v >> 32) {                     /* four digits a step */
        uint32_t r = (uint32_t)(v % 10000);
        v /= 10000;
        p -= 4;
        memcpy(p, ts_digit_quads + 4 * r, 4);
    }
    uint32_t w = (uint32_t)v;
    while (w >= 10000) {                  /* four digits a step */
        uint32_t r = w % 10000;
        w /= 10000;
        p -= 4;
        memcpy(p, ts_digit_quads + 4 * r, 4);
    }
    while (w >= 100) {
        unsigned d = (w % 100) * 2;
        w /= 100;
        p -= 2;
        memcpy(p, ts_digit_pairs + d, 2);
    }
    if (w >= 10)
        memcpy(p - 2, ts_digit_pairs + w * 2, 2);
    else
        p[-1] = (char)('0' + w);
    return (size_t)n;
}

/* a signed integer in the record hot path; writes up to 21 bytes at out */
static inline size_t ts_fmt_i64(int64_t v, char *out)
{
    if (v < 0) {
        *out = '-';
        return 1 + ts_fmt_u64_wide((uint64_t)0 - (uint64_t)v, out + 1);
    }
    return ts_fmt_u64_wide((uint64_t)v, out);
}

/*
 * The record writer of integers: no loop and no digit count first.  The
 * value is cut into pieces of eight digits; a piece's eight ASCII digits are
 * made in one 64-bit register from two four-digit table entries (the first
 * digit in the lowest byte, as an 8-byte store puts it first in memory), its
 * leading zeros found from that register (ctz of the digits less "00000000")
 * and shifted out before the store.  Stores are 8 bytes wide, so bytes past
 * the returned length are overwritten with junk: the caller gives 24 bytes.
 */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define TS_FMT_INT_PIECES 1
#define TS_ASCII_ZEROS8 UINT64_C(0x3030303030303030)

/* the eight digits of x < 10^8, leading zeros included, first in the lowest byte */
static inline uint64_t ts_digits8(uint32_t x)
{
    uint32_t hi = x / 10000, lo = x - hi * 10000;
    uint32_t a, b;
    memcpy(&a, ts_digit_quads + 4 * hi, 4);
    memcpy(&b, ts_digit_quads + 4 * lo, 4);
    return (uint64_t)a | (uint64_t)b << 32;
}

/* x < 10^8 without leading zeros (x = 0: "0"); writes 8 bytes at out, returns the length */
static inline size_t ts_put_digits8_trim(uint32_t x, char *out)
{
    uint64_t d = ts_digits8(x);
    /* zero digits become zero bytes; the last digit always stays */
    int lz = __builtin_ctzll((d - TS_ASCII_ZEROS8) | (UINT64_C(1) << 56)) >> 3;
    d >>= 8 * lz;
    memcpy(out, &d, 8);
    return (size_t)(8 - lz);
}
#endif

/* v in decimal, as ts_fmt_u64; may write up to 24 bytes at out */
static inline size_t ts_fmt_u64_rec(uint64_t v, char *out)
{
#ifdef TS_FMT_INT_PIECES
    if (v < 10000) {                    /* four digits or fewer: one table entry */
        uint32_t d;
        memcpy(&d, ts_digit_quads + 4 * v, 4);
        int lz = __builtin_ctz((d - UINT32_C(0x30303030)) | (UINT32_C(1) << 24)) >> 3;
        d >>= 8 * lz;
        memcpy(out, &d, 4);
        return (size_t)(4 - lz);
    }
    if (v < UINT64_C(100000000)) return ts_put_digits8_trim((uint32_t)v, out);
    if (v < UINT64_C(10000000000000000)) {
        uint64_t hi = v / UINT64_C(100000000);
        uint64_t lo8 = ts_digits8((uint32_t)(v - hi * UINT64_C(100000000)));
        size_t n;
        if (hi < 10000) {               /* 9 to 12 digits: the head from one table entry */
            uint32_t d;
            memcpy(&d, ts_digit_quads + 4 * hi, 4);
            int lz = __builtin_ctz((d - UINT32_C(0x30303030)) | (UINT32_C(1) << 24)) >> 3;
            d >>= 8 * lz;
            memcpy(out, &d, 4);
            n = (size_t)(4 - lz);
        } else {
            n = ts_put_digits8_trim((uint32_t)hi, out);
        }
        memcpy(out + n, &lo8, 8);
        return n + 8;
    }
#endif
    return ts_fmt_u64_wide(v, out);
}

/* a signed integer in a record (formats.c); may write up to 25 bytes at out */
static inline size_t ts_fmt_i64_rec(int64_t v, char *out)
{
    if (v < 0) {
        *out = '-';
        return 1 + ts_fmt_u64_rec((uint64_t)0 - (uint64_t)v, out + 1);
    }
    return ts_fmt_u64_rec((uint64_t)v, out);
}

/* zero-padded to at least width digits */
static inline size_t ts_fmt_u64_pad(uint64_t v, int width, char *out)
{
    int n = ts_count_digits(v);
    size_t pad = n < width ? (size_t)(width - n) : 0;
    memset(out, '0', pad);
    return pad + ts_fmt_u64(v, out + pad);
}

#endif
