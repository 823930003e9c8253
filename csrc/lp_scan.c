/* Scanning InfluxDB line protocol for the import (reading a user's file): each line of a
 * batch into its measurement, tags, fields with their types and parsed values, and its
 * timestamp, in caller-provided arrays (tsbench.h, ts_lp_scan). No globals, no allocation.
 *
 * The rules (InfluxDB's line protocol reference): a measurement escapes commas and spaces
 * with a backslash; tag keys, tag values and field keys escape commas, equals signs and
 * spaces; string field values escape double quotes and backslashes. A backslash before
 * any other byte is itself. Integers end in i, unsigned integers in u; booleans are t, T,
 * true, True, TRUE, f, F, false, False, FALSE; everything else numeric is a float. */

#include <float.h>
#include <stdlib.h>
#include <string.h>

#include "mix.h"
#include "tsbench.h"

#ifdef __SSE2__
#include <emmintrin.h>
#endif

/* what ends a name (1) and starts an escape (2), per kind of name */
enum { K_MEAS = 0, K_TAGKEY = 1, K_TAGVAL = 2, K_FIELDKEY = 3 };
static const uint8_t STOP_MEAS[256] = {[','] = 1, [' '] = 1, ['\\'] = 2};
static const uint8_t STOP_KEY[256] = {[','] = 1, [' '] = 1, ['='] = 1, ['\\'] = 2};
static const uint8_t STOP_VAL[256] = {[','] = 1, [' '] = 1, ['\\'] = 2};

static inline int is_escapable(int kind, char c)
{
    return c == ',' || c == ' ' || (kind != K_MEAS && c == '=');
}

#define HASH_SEED 0x9e3779b97f4a7c15ULL
#define HASH_MUL 0xff51afd7ed558ccdULL

/* a name's hash from its state and length: one more multiplication (the schema mixes the
 * hashes further where it needs them uniform) */
static inline uint64_t hash_end(uint64_t h, uint64_t n)
{
    h = (h ^ n) * HASH_MUL;
    return h ^ (h >> 32);
}

/* the hash state after the bytes [s, s + n), 8 at a time (the last word zero-padded): the
 * same for a text whether it comes in one piece or in pieces of multiples of 8 bytes. Bytes
 * up to lim may be read (the last word is one load, masked, when it fits before lim). */
static inline uint64_t hash_more(uint64_t h, const char *s, size_t n, const char *lim)
{
    uint64_t w;
    for (; n >= 8; s += 8, n -= 8) {
        memcpy(&w, s, 8);
        h = (h ^ w) * HASH_MUL;
        h = (h << 31) | (h >> 33);
    }
    if (n) {
        if (lim - s >= 8) {
            memcpy(&w, s, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
            w &= ~0ULL << (64 - 8 * n);      /* the first n bytes, as memcpy of n would leave them */
#else
            w &= ~0ULL >> (64 - 8 * n);
#endif
        } else {
            w = 0;
            memcpy(&w, s, n);
        }
        h = (h ^ w) * HASH_MUL;
        h = (h << 31) | (h >> 33);
    }
    return h;
}

/* a name with escapes from p: its unescaped bytes hashed through a small buffer */
static const char *scan_escaped(const char *p, const char *e, int kind, const uint8_t *stop,
                                size_t done, uint64_t *h)
{
    char tmp[256];
    size_t k = 0, total = done;
    uint64_t x = HASH_SEED;
    for (; p < e; p++) {
        char c = *p;
        if (stop[(unsigned char)c] == 2 && p + 1 < e && is_escapable(kind, p[1]))
            c = *++p;
        else if (stop[(unsigned char)c] == 1)
            break;
        tmp[k++] = c;
        if (k == sizeof tmp) {
            x = hash_more(x, tmp, k, tmp + sizeof tmp);
            total += k;
            k = 0;
        }
    }
    x = hash_more(x, tmp, k, tmp + sizeof tmp);
    *h = hash_end(x, total + k);
    return p;
}

/* the first byte of [p, e) that is a comma, a space, a backslash, or with eq an equals sign
 * (stop: the same set as a table, for the last bytes); 16 bytes a step with SSE2 */
static inline const char *find_stop(const char *p, const char *e, const uint8_t *stop, int eq)
{
#ifdef __SSE2__
    const __m128i comma = _mm_set1_epi8(','), space = _mm_set1_epi8(' '), bs = _mm_set1_epi8('\\');
    const __m128i other = _mm_set1_epi8(eq ? '=' : ',');
    for (; e - p >= 16; p += 16) {
        __m128i x = _mm_loadu_si128((const __m128i *)p);
        __m128i m = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, comma), _mm_cmpeq_epi8(x, space)),
                                 _mm_or_si128(_mm_cmpeq_epi8(x, bs), _mm_cmpeq_epi8(x, other)));
        unsigned bits = (unsigned)_mm_movemask_epi8(m);
        if (bits)
            return p + __builtin_ctz(bits);
    }
#endif
    while (p < e && !stop[(unsigned char)*p])
        p++;
    return p;
}

/* a name from p up to its first unescaped stop byte (or e): returns where it stopped,
 * the hash of its unescaped text in *h (the same whether escapes were used or not) */
static inline const char *scan_name(const char *p, const char *e, int kind, uint64_t *h)
{
    const uint8_t *stop = kind == K_MEAS ? STOP_MEAS : kind == K_TAGVAL ? STOP_VAL : STOP_KEY;
    const char *s = p;
    p = find_stop(p, e, stop, stop == STOP_KEY);
    if (p < e && stop[(unsigned char)*p] == 2)
        return scan_escaped(s, e, kind, stop, 0, h);
    *h = hash_end(hash_more(HASH_SEED, s, (size_t)(p - s), e), (uint64_t)(p - s));
    return p;
}

static const double POW10[23] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
                                 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* the decimal m * 10^exp10 (m < 2^64, |exp10| <= 22) rounded to a double, when that can be
 * done exactly here: m < 2^53 by one double operation (both operands exact, Clinger's fast
 * path); up to 2^64 by one x87 extended operation (64-bit significand: m and 10^k, k <= 27,
 * are exact, the result is within half an extended unit), rounded to double unless it
 * lands exactly on a midpoint between two doubles, where the true value could be on either
 * side. 0: not done (strtod then). */
static int decimal_to_double(uint64_t m, int exp10, double *out)
{
    if (exp10 < -22 || exp10 > 22)
        return 0;
    if (m < (1ULL << 53)) {
        double d = (double)m;
        *out = exp10 < 0 ? d / POW10[-exp10] : d * POW10[exp10];
        return 1;
    }
#if LDBL_MANT_DIG == 64
    static const long double P10L[23] = {1e0L, 1e1L, 1e2L, 1e3L, 1e4L, 1e5L, 1e6L, 1e7L, 1e8L, 1e9L,
        1e10L, 1e11L, 1e12L, 1e13L, 1e14L, 1e15L, 1e16L, 1e17L, 1e18L, 1e19L, 1e20L, 1e21L, 1e22L};
    long double x = (long double)m;    /* 10^k = 5^k 2^k: exact, 5^22 < 2^52 */
    x = exp10 < 0 ? x / P10L[-exp10] : x * P10L[exp10];
    uint64_t sig;
    memcpy(&sig, &x, sizeof sig);      /* x86 extended: the low 8 bytes are the significand */
    if ((sig & 0x7ff) == 0x400)        /* exactly halfway between two doubles: undecided */
        return 0;
    *out = (double)x;
    return 1;
#else
    return 0;
#endif
}

/* a float [p, e): [+-]digits[.digits][(e|E)[+-]digits] with at least one digit before the
 * exponent, by decimal_to_double when its digits fit in 19 (none dropped), else strtod.
 * 0 when not one. */
static int parse_float(const char *p, const char *e, double *out)
{
    const char *s = p;
    int neg = 0;
    if (p < e && (*p == '-' || *p == '+'))
        neg = *p++ == '-';
    uint64_t m = 0;
    int digits = 0, sig = 0, exp10 = 0, dropped = 0;
    for (; p < e && *p >= '0' && *p <= '9'; p++, digits++) {
        if (sig < 19) { m = m * 10 + (uint64_t)(*p - '0'); sig += (m != 0); }
        else { exp10++; dropped = 1; }
    }
    if (p < e && *p == '.') {
        for (p++; p < e && *p >= '0' && *p <= '9'; p++, digits++) {
            if (sig < 19) { m = m * 10 + (uint64_t)(*p - '0'); sig += (m != 0); exp10--; }
            else dropped = 1;
        }
    }
    if (!digits)
        return 0;
    if (p < e && (*p == 'e' || *p == 'E')) {
        p++;
        int eneg = 0, ed = 0, ev = 0;
        if (p < e && (*p == '-' || *p == '+'))
            eneg = *p++ == '-';
        for (; p < e && *p >= '0' && *p <= '9'; p++, ed++)
            if (ev < 100000) ev = ev * 10 + (*p - '0');
        if (!ed)
            return 0;
        exp10 += eneg ? -ev : ev;
    }
    if (p != e)
        return 0;
    double d;
    if (!dropped && decimal_to_double(m, exp10, &d)) {
        *out = neg ? -d : d;
        return 1;
    }
    char tmp[128];
    size_t n = (size_t)(e - s);
    if (n >= sizeof tmp)
        return 0;
    memcpy(tmp, s, n);
    tmp[n] = 0;
    *out = strtod(tmp, NULL);
    return 1;
}

/* an unsigned decimal [p, e) into *out; 0 when empty, not digits or over 2^64 - 1 */
static int parse_u64(const char *p, const char *e, uint64_t *out)
{
    if (p == e)
        return 0;
    uint64_t v = 0;
    if (e - p <= 19) {                 /* 19 digits fit: no overflow checks */
        for (; p < e; p++) {
            unsigned d = (unsigned)(*p - '0');
            if (d > 9)
                return 0;
            v = v * 10 + d;
        }
        *out = v;
        return 1;
    }
    for (; p < e; p++) {
        if (*p < '0' || *p > '9' || __builtin_mul_overflow(v, 10, &v) ||
            __builtin_add_overflow(v, (uint64_t)(*p - '0'), &v))
            return 0;
    }
    *out = v;
    return 1;
}

/* a signed decimal [p, e) into *out; 0 when not one or out of int64's range */
static int parse_i64(const char *p, const char *e, int64_t *out)
{
    int neg = p < e && *p == '-';
    uint64_t u;
    if (!parse_u64(p + neg, e, &u) || u > (uint64_t)INT64_MAX + neg)
        return 0;
    *out = neg ? (int64_t)(0 - u) : (int64_t)u;
    return 1;
}

static int is_bool(const char *p, size_t n, int64_t *v)
{
    static const char *const T[] = {"t", "T", "true", "True", "TRUE"};
    static const char *const F[] = {"f", "F", "false", "False", "FALSE"};
    for (int i = 0; i < 5; i++) {
        if (strlen(T[i]) == n && memcmp(p, T[i], n) == 0) { *v = 1; return 1; }
        if (strlen(F[i]) == n && memcmp(p, F[i], n) == 0) { *v = 0; return 1; }
    }
    return 0;
}

/* one field value from p: its type, bits and span; returns where it ends (the next
 * unescaped comma or space outside quotes, or e), or NULL with *err set */
static const char *scan_value(const char *p, const char *e, uint8_t *type, int64_t *bits,
                              const char **vs, const char **ve, int32_t *err)
{
    if (p < e && *p == '"') {
        const char *q = ++p;
        while (q < e && *q != '"')
            q += (*q == '\\' && q + 1 < e) ? 2 : 1;
        if (q >= e) { *err = TS_LP_E_QUOTE; return NULL; }
        *type = TS_LP_STRING; *bits = 0; *vs = p; *ve = q;
        q++;
        if (q < e && *q != ',' && *q != ' ') { *err = TS_LP_E_AFTER_VALUE; return NULL; }
        return q;
    }
    const char *q = p;
    while ((q = find_stop(q, e, STOP_VAL, 0)) < e && *q == '\\')   /* a backslash: not a number's, */
        q++;                                                       /* a boolean's or an end */
    *vs = p; *ve = q;
    if (q == p) { *err = TS_LP_E_NO_VALUE; return NULL; }
    char last = q[-1];
    if (last == 'i') {
        *type = TS_LP_INT;
        if (!parse_i64(p, q - 1, bits)) { *err = TS_LP_E_INT; return NULL; }
    } else if (last == 'u') {
        *type = TS_LP_UINT;
        if (!parse_u64(p, q - 1, (uint64_t *)bits)) { *err = TS_LP_E_UINT; return NULL; }
    } else if ((*p == 't' || *p == 'T' || *p == 'f' || *p == 'F') && is_bool(p, (size_t)(q - p), bits)) {
        *type = TS_LP_BOOL;
    } else {
        double d;
        *type = TS_LP_FLOAT;
        if (!parse_float(p, q, &d)) { *err = TS_LP_E_FLOAT; return NULL; }
        memcpy(bits, &d, sizeof d);
    }
    return q;
}

static const int64_t PREC_NS[4] = {1, 1000, 1000000, 1000000000};

/* the tag set from p (just after the measurement's comma): returns where it stopped (a
 * space), or NULL with *err; fills tags from s->tags up, *series gets their hash sum */
static const char *scan_tags(ts_lp_scan *s, const char *buf, const char *p, const char *e, uint64_t *nt,
                             uint64_t *series, int32_t *err, int *full)
{
    for (;;) {
        if (*nt == s->cap_tags) { *full = 1; return NULL; }
        uint64_t kh, vh;
        const char *k = p;
        p = scan_name(p, e, K_TAGKEY, &kh);
        if (p == k || p >= e || *p != '=') { *err = TS_LP_E_TAG; return NULL; }
        const char *v = ++p;
        p = scan_name(p, e, K_TAGVAL, &vh);
        if (p == v) { *err = TS_LP_E_TAG; return NULL; }
        s->tag_key[*nt] = kh;
        s->tag_val[*nt] = vh;
        s->tag_off[*nt] = (uint32_t)(k - buf);
        s->tag_klen[*nt] = (uint32_t)(v - 1 - k);
        s->tag_vlen[*nt] = (uint32_t)(p - v);
        (*nt)++;
        *series += ts_mix64(kh * 31 + vh);
        if (p >= e) { *err = TS_LP_E_NO_FIELDS; return NULL; }
        if (*p == ' ')
            return p;
        p++;   /* a comma: the next tag */
    }
}

/* the field set from p: returns where it stopped (a space or e), or NULL with *err */
static const char *scan_fields(ts_lp_scan *s, const char *buf, const char *p, const char *e, uint64_t *nf,
                               uint64_t *shape, int32_t *err, int *full)
{
    for (;;) {
        if (*nf == s->cap_fields) { *full = 1; return NULL; }
        uint64_t kh;
        const char *k = p, *vs, *ve;
        p = scan_name(p, e, K_FIELDKEY, &kh);
        if (p == k || p >= e || *p != '=') { *err = TS_LP_E_FIELD_KEY; return NULL; }
        uint8_t type;
        int64_t bits;
        const char *v = p + 1;
        p = scan_value(v, e, &type, &bits, &vs, &ve, err);
        if (!p)
            return NULL;
        uint64_t i = *nf;
        s->field_key[i] = kh;
        s->field_type[i] = type;
        s->field_value[i] = bits;
        s->field_off[i] = (uint32_t)(k - buf);
        s->field_klen[i] = (uint32_t)(v - 1 - k);
        s->field_voff[i] = (uint32_t)(vs - buf);
        s->field_vlen[i] = (uint32_t)(ve - vs);
        *nf = i + 1;
        *shape = ts_mix64(*shape ^ (kh + type));
        if (p >= e || *p == ' ')
            return p;
        p++;
    }
}

/* one non-blank, non-comment line [p, e): 0 parsed (a point written), > 0 an error code
 * (*col where), -1 no room in an array */
static int32_t scan_line(ts_lp_scan *s, const char *buf, const char *p, const char *e, int64_t line_no,
                         const char **col)
{
    uint64_t n = s->points, nt = s->tags, nf = s->fields;
    int32_t err = 0;
    int full = 0;
    if (n == s->cap_points)
        return -1;
    uint64_t mh;
    const char *m = p;
    p = scan_name(p, e, K_MEAS, &mh);
    const char *me = p;
    *col = p;
    if (p == m)
        return TS_LP_E_MEASUREMENT;
    if (p >= e)
        return TS_LP_E_NO_FIELDS;
    uint64_t series = ts_mix64(mh);
    if (*p == ',') {
        p = scan_tags(s, buf, p + 1, e, &nt, &series, &err, &full);
        if (!p)
            return full ? -1 : err;
    }
    p++;   /* the space before the fields */
    *col = p;
    if (p >= e || *p == ' ')
        return TS_LP_E_NO_FIELDS;
    uint64_t shape = mh;
    p = scan_fields(s, buf, p, e, &nf, &shape, &err, &full);
    if (!p)
        return full ? -1 : err;
    *col = p;
    int64_t t = 0;
    uint8_t has = 0;
    if (p < e && p + 1 < e) {
        has = 1;
        if (!parse_i64(p + 1, e, &t) || __builtin_mul_overflow(t, PREC_NS[s->precision], &t))
            return TS_LP_E_TIME;
    }
    s->line[n] = line_no;
    s->meas[n] = mh;
    s->series[n] = series;
    s->shape[n] = shape;
    s->time[n] = t;
    s->has_time[n] = has;
    s->meas_off[n] = (uint32_t)(m - buf);
    s->meas_len[n] = (uint32_t)(me - m);
    s->tag_end[n] = (uint32_t)nt;
    s->field_end[n] = (uint32_t)nf;
    s->points = n + 1;
    s->tags = nt;
    s->fields = nf;
    return 0;
}

static int blank(char c)
{
    return c == ' ' || c == '\t';
}

int32_t ts_lp_scan_lines(ts_lp_scan *s, const char *buf, uint64_t len)
{
    if (!s || !buf || len >= (1ULL << 32) || s->precision < 0 || s->precision > TS_PREC_S)
        return TS_ERR_ARG;
    s->used = s->lines = s->points = s->tags = s->fields = s->blank = s->comments = s->errors = 0;
    const char *p = buf, *end = buf + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end, *next = nl ? nl + 1 : end;
        if (le > p && le[-1] == '\r')
            le--;
        const char *q = p;
        while (q < le && blank(*q))
            q++;
        int64_t line_no = s->first_line + (int64_t)s->lines;
        if (q == le) {
            s->blank++;
        } else if (*q == '#') {
            s->comments++;
        } else {
            const char *col = q;
            int32_t rc = scan_line(s, buf, q, le, line_no, &col);
            if (rc < 0)
                return TS_ERR_SPACE;
            if (rc > 0) {
                if (s->errors < s->max_errors) {
                    s->err_line[s->errors] = line_no;
                    s->err_code[s->errors] = rc;
                    s->err_col[s->errors] = (uint32_t)(col - p);
                }
                s->errors++;
            }
        }
        s->lines++;
        p = next;
        s->used = (uint64_t)(p - buf);
    }
    return TS_OK;
}

int32_t ts_lp_prev_times(const int64_t *ids, const int64_t *time, uint64_t n, int64_t *last,
                         uint64_t n_series, int64_t *prev)
{
    if (n && (!ids || !time || !last || !prev))
        return TS_ERR_ARG;
    for (uint64_t i = 0; i < n; i++) {
        if (ids[i] < 0 || (uint64_t)ids[i] >= n_series)
            return TS_ERR_ARG;
        prev[i] = last[ids[i]];
        last[ids[i]] = time[i];
    }
    return TS_OK;
}
