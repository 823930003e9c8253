/*
 * fmt_double.c -- shortest round-trip double to positional decimal text.
 *
 * The digits come from the Schubfach method (R. Giulietti, "The Schubfach
 * way to render doubles"):
 *
 *   A finite double is v = c * 2^q.  Every real in its rounding interval R_v
 *   (half an ulp each side; a quarter ulp below at powers of two; closed when
 *   c is even, open when c is odd, like strtod's round-half-even) reads back
 *   as v.  Choose k with 10^k <= |R_v| < 10^(k+1).  Then, in units of 10^k,
 *   R_v is at least 1 and less than 10 wide, so
 *     - at most one multiple of 10 lies in R_v; if one does, it is the
 *       unique shortest decimal (one digit shorter than anything else);
 *     - otherwise floor(v) or floor(v)+1 (one of which always lies in R_v)
 *       is the answer; if both do, take the one closer to v, ties to even.
 *   This is exactly the choice made by Python's repr (David Gay's dtoa,
 *   mode 0).
 *   The scaled values v * 10^-k and the interval ends are computed with a
 *   128-bit approximation g of 10^-k (pow10_table.h) and "round to odd",
 *   which keeps just enough information (floor + "was it inexact") for the
 *   comparisons with integers to be exact.  gen_pow10.py --check proves the
 *   approximation error can never change the outcome.
 *
 * The digits are then laid out positionally, four at a time from a table.
 */
#include "fmt_double.h"

#include <stdint.h>
#include <string.h>

#include "fmt_int.h"
#include "pow10_table.h"

__extension__ typedef unsigned __int128 ts_u128;

static const uint64_t ts_dbl_pow10[20] = {
    1u, 10u, 100u, 1000u, 10000u, 100000u, 1000000u, 10000000u, 100000000u,
    1000000000u, 10000000000u, 100000000000u, 1000000000000u,
    10000000000000u, 100000000000000u, 1000000000000000u,
    10000000000000000u, 100000000000000000u, 1000000000000000000u,
    10000000000000000000u,
};

#define TS_C_MIN ((uint64_t)1 << 52)  /* hidden bit of a normal significand */
#define TS_Q_MIN (-1074)              /* exponent of the subnormals */

/* floor(q * log10(2)), exact for |q| <= 1700 (checked by gen_pow10.py) */
static inline int floor_log10_pow2(int q) { return (q * 315653) >> 20; }

/* floor(log10(3/4 * 2^q)), exact on the double exponent range */
static inline int floor_log10_3q_pow2(int q) { return (q * 315653 - 131072) >> 20; }

/* floor(e * log2(10)), exact on the table range */
static inline int floor_log2_pow10(int e) { return (e * 1741647) >> 19; }

/*
 * Round to odd of g * cp / 2^128 (g = {hi, lo}): the floor, with its lowest
 * bit forced to 1 when the fraction is nonzero.  The fraction is looked at
 * only down to 2^-68, which absorbs the (< 2^-68) over-estimate of g.
 */
static inline uint64_t round_to_odd(const uint64_t g[2], uint64_t cp)
{
    ts_u128 lo = (ts_u128)g[1] * cp;
    ts_u128 a = (ts_u128)g[0] * cp + (uint64_t)(lo >> 64); /* floor(g*cp/2^64) */
    uint64_t frac = (uint64_t)a | ((uint64_t)lo >> 60);
    return (uint64_t)(a >> 64) | (frac != 0);
}

/* Number of decimal digits of f (f >= 1, f < 10^19). */
static inline int dec_len(uint64_t f)
{
    int t = ((64 - __builtin_clzll(f)) * 1233) >> 12; /* ~ floor(bits*log10 2) */
    return t + (f >= ts_dbl_pow10[t]);
}

/* ts_digit_quads + 4 * i: the four digits of i < 10^4, "0000" to "9999"
   (40 kB; declared in fmt_int.h, whose integers use it too, so one copy is
   cached), spelled out by the preprocessor: TS_Qn(s) is the 10^n texts s
   followed by n more digits, in order, as adjacent string literals. */
#define TS_Q1(s) s "0" s "1" s "2" s "3" s "4" s "5" s "6" s "7" s "8" s "9"
#define TS_Q2(s) TS_Q1(s "0") TS_Q1(s "1") TS_Q1(s "2") TS_Q1(s "3") TS_Q1(s "4") \
                 TS_Q1(s "5") TS_Q1(s "6") TS_Q1(s "7") TS_Q1(s "8") TS_Q1(s "9")
#define TS_Q3(s) TS_Q2(s "0") TS_Q2(s "1") TS_Q2(s "2") TS_Q2(s "3") TS_Q2(s "4") \
                 TS_Q2(s "5") TS_Q2(s "6") TS_Q2(s "7") TS_Q2(s "8") TS_Q2(s "9")
const char ts_digit_quads[40001] =
    TS_Q3("0") TS_Q3("1") TS_Q3("2") TS_Q3("3") TS_Q3("4")
    TS_Q3("5") TS_Q3("6") TS_Q3("7") TS_Q3("8") TS_Q3("9");

/* Writes exactly 8 digits of x < 10^8 at p, four at a time. */
static inline void put8(char *p, uint32_t x)
{
    uint32_t hi = x / 10000, lo = x % 10000;
    memcpy(p + 0, ts_digit_quads + 4 * hi, 4);
    memcpy(p + 4, ts_digit_quads + 4 * lo, 4);
}

/* Writes f < 10^17 as exactly 17 digits (with leading zeros) at p. */
static inline void put17(char *p, uint64_t f)
{
    uint64_t a = f / 100000000u;                 /* < 10^9 */
    uint32_t lo = (uint32_t)(f - a * 100000000u);
    uint32_t a1 = (uint32_t)a / 100000000u;      /* 0..9 */
    uint32_t a8 = (uint32_t)a - a1 * 100000000u;
    p[0] = (char)('0' + a1);
    put8(p + 1, a8);
    put8(p + 9, lo);
}

/* Number of trailing decimal zeros of f >= 1, by arithmetic: a count read
   back from the digits just stored would wait for those stores. */
static inline int trailing_zeros(uint64_t f)
{
    int n = 0;
    for (; f % 10 == 0; f /= 10) n++;
    return n;
}

/* Writes n '0's at p, eight at a time (may write up to 7 more; callers
   overwrite them or stay within TS_DOUBLE_MAX_CHARS). */
static inline char *put_zeros(char *p, int n)
{
    for (int i = 0; i < n; i += 8) memcpy(p + i, "00000000", 8);
    return p + n;
}

/*
 * Lays out the decimal f * 10^e (1 <= f < 10^17) positionally at p and
 * returns the end.  Writes use fixed-size copies, so bytes past the end
 * may be overwritten too, but only below max(out + 34, end + 7), which is
 * within TS_DOUBLE_MAX_CHARS.
 */
static inline char *put_decimal(char *p, uint64_t f, int e)
{
    char buf[40];
    put17(buf, f);
    memset(buf + 17, 0, 17);            /* keep the over-reads below defined */
    int n = dec_len(f);
    const char *d = buf + 17 - n;       /* the n significant digits */

    if (e >= 0) {                       /* integral: digits, then e zeros */
        memcpy(p, d, 16);
        p[16] = d[16];                  /* n may be 17 */
        return put_zeros(p + n, e);
    }
    int tz = trailing_zeros(f);         /* drop trailing zeros of f */
    if (tz > -e) tz = -e;               /* ... but only fractional ones */
    n -= tz;
    e += tz;
    int ip = n + e;                     /* digits before the decimal point */

    if (ip > 0) {                       /* d..d.d..d (here ip <= 16) */
        if (e == 0) {                   /* f was a whole number after all */
            memcpy(p, d, 16);
            p[16] = d[16];
            return p + n;
        }
        memcpy(p, d, 16);
        p[ip] = '.';
        memcpy(p + ip + 1, d + ip, 16); /* n - ip <= 16 fractional digits */
        return p + n + 1;
    }
    /* 0.00..0d..d with -ip zeros after the point */
    if (ip >= -6) {                     /* common: at most six zeros */
        memcpy(p, "0.000000", 8);
        p += 2 - ip;
        memcpy(p, d, 16);
        p[16] = d[16];
        return p + n;
    }
    p[0] = '0';                         /* tiny: exact copies only */
    p[1] = '.';
    p = put_zeros(p + 2, -ip);
    for (int i = 0; i < n; i++) p[i] = d[i];
    return p + n;
}

size_t ts_format_double(double v, char *out)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    uint64_t t = bits & (TS_C_MIN - 1);   /* stored significand */
    int be = (int)(bits >> 52) & 0x7ff;   /* biased exponent */
    char *p = out;

    if (be == 0x7ff) {
        if (t != 0) { memcpy(out, "NaN", 3); return 3; }
        memcpy(out, (bits >> 63) ? "-Inf" : "+Inf", 4);
        return 4;
    }
    if (bits >> 63) *p++ = '-';

    /* v = c * 2^q */
    uint64_t c;
    int q;
    if (be != 0) {
        c = t | TS_C_MIN;
        q = be - 1075;
        /* Fast path: an integer below 2^53 is its own shortest rendering
           (its neighbours are at most 1 away). */
        if (q <= 0 && q > -53) {
            uint64_t f = c >> -q;
            if ((f << -q) == c)
                return (size_t)(put_decimal(p, f, 0) - out);
        }
    } else {
        if (t == 0) { *p++ = '0'; return (size_t)(p - out); }
        c = t;
        q = TS_Q_MIN;
    }

    /* Rounding interval, in units of 2^(q-2):  [cbl, cbr] around cb = 4c.
       odd c: endpoints excluded (out_ = 1), even c: included (out_ = 0). */
    uint64_t out_ = c & 1;
    uint64_t cb = c << 2;
    uint64_t cbr = cb + 2;
    uint64_t cbl;
    int k;
    if (c != TS_C_MIN || q == TS_Q_MIN) {
        cbl = cb - 2;                   /* symmetric: +-1/2 ulp */
        k = floor_log10_pow2(q);        /* 10^k <= 2^q: interval width >= 1 */
    } else {
        cbl = cb - 1;                   /* power of two: lower gap is half */
        k = floor_log10_3q_pow2(q);     /* width is 3/4 * 2^q */
    }

    /* Scale by 10^-k ~ g * 2^(floor(-k*log2 10) - 127); the shift h (1..4)
       folds the binary exponents together so one product gives the value. */
    const uint64_t *g = ts_pow10_g[-k - TS_POW10_E_MIN];
    int h = q + floor_log2_pow10(-k) + 1;
    uint64_t vb = round_to_odd(g, cb << h);   /* 4 * v  / 10^k (to odd) */
    uint64_t vbl = round_to_odd(g, cbl << h); /* 4 * lower end / 10^k   */
    uint64_t vbr = round_to_odd(g, cbr << h); /* 4 * upper end / 10^k   */

    uint64_t s = vb >> 2;                     /* floor(v / 10^k) */

    /* One digit shorter: the multiples of 10 around v.  Since R_v is less than
       10 units wide at most one of them can be inside; if exactly one is, it
       is the answer.  Otherwise, full length: s or s+1, at least one of which
       is inside; if both are, the one closer to v, and on a tie the even one.
       Both are worked out and one taken by a mask, not a branch: which one it
       is depends on the digits, unpredictably. */
    uint64_t s10 = s / 10;
    uint64_t upin = vbl + out_ <= (s10 * 10) << 2;        /* 10*s10 in R_v ? */
    uint64_t wpin = ((s10 * 10 + 10) << 2) + out_ <= vbr; /* 10*s10+10 in R_v ? */
    uint64_t uin = vbl + out_ <= s << 2;
    uint64_t win = ((s + 1) << 2) + out_ <= vbr;
    uint64_t mid = (s << 2) + 2;              /* 4 * (s + 1/2) */
    uint64_t closer_up = (vb > mid) | ((vb == mid) & s);
    uint64_t full = s + ((uin ^ 1) | (win & closer_up));
    uint64_t shorter = upin ^ wpin;
    uint64_t take = (uint64_t)0 - shorter;    /* all ones: the shorter one */
    uint64_t f = ((s10 + wpin) & take) | (full & ~take);
    int e = k + (int)shorter;

    return (size_t)(put_decimal(p, f, e) - out);
}
