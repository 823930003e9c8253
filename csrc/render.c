/* Rendering CSV parts through a template (phase 2: load): each CSV line of a
 * split part (time, tags, fields) becomes one piece of text a database takes
 * in bulk (an ES bulk action, a CQL statement of a batch with its bound values
 * in the protocol's binary form, a BSON document, ...). The template is a list of ops: literal
 * bytes, a column in some encoding, a NULL guard, the start and end of a binary
 * value built from several ops. No globals, no
 * allocation: the caller hands in the output buffer, the per-line end offsets
 * and a scratch array of column spans; a call that runs out of room stops at
 * a line boundary and is resumed by calling again with more room. */

#include <stdlib.h>
#include <string.h>

#include "tsbench.h"
#include "fmt_int.h"

#define NS_PER_S INT64_C(1000000000)
#define NS_PER_MS INT64_C(1000000)

typedef ts_span span;   /* a value as written, quotes included */

/* ---- CSV parsing ---------------------------------------------------------------------- */

/* one CSV record starting at p (not past end): fills the spans of its first
 * cap columns, sets *n to its column count and *next past its newline.
 * Returns 0 or TS_ERR_CSV (an unterminated quote, text after a closing quote). */
static int32_t parse_record(const char *p, const char *end, span *cols, uint32_t cap,
                            uint32_t *n, const char **next)
{
    uint32_t c = 0;
    for (;;) {
        const char *s = p;
        if (p < end && *p == '"') {
            for (p++;; p += 2) {
                p = memchr(p, '"', (size_t)(end - p));
                if (!p)
                    return TS_ERR_CSV;
                if (p + 1 >= end || p[1] != '"')
                    break;
            }
            p++;   /* past the closing quote */
            if (p < end && *p == '\r' && p + 1 < end && p[1] == '\n')
                p++;
            if (p < end && *p != ',' && *p != '\n')
                return TS_ERR_CSV;
        } else {
            while (p < end && *p != ',' && *p != '\n')
                p++;
        }
        const char *e = p;
        if (e > s && e[-1] == '\r' && (p == end || *p == '\n'))
            e--;
        if (c < cap)
            cols[c] = (span){s, e};
        c++;
        if (p == end || *p == '\n') {
            *n = c;
            *next = p < end ? p + 1 : end;
            return TS_OK;
        }
        p++;   /* past the comma */
    }
}

static int is_null(span v) { return v.s == v.e; }

/* the value without its quotes; *quoted says whether "" pairs are inside */
static span inner(span v, int *quoted)
{
    *quoted = v.e - v.s >= 2 && *v.s == '"';
    return *quoted ? (span){v.s + 1, v.e - 1} : v;
}

/* ---- text encodings ------------------------------------------------------------------- */

/* the CSV value unquoted */
static char *put_raw(span v, char *o)
{
    int q;
    v = inner(v, &q);
    if (!q) {
        memcpy(o, v.s, (size_t)(v.e - v.s));
        return o + (v.e - v.s);
    }
    for (const char *p = v.s; p < v.e; p++) {
        *o++ = *p;
        if (*p == '"')
            p++;   /* "" -> " */
    }
    return o;
}

/* the value as the inside of a JSON string */
static char *put_jsonin(span v, char *o)
{
    static const char hex[] = "0123456789abcdef";
    int q;
    v = inner(v, &q);
    for (const char *p = v.s; p < v.e; p++) {
        unsigned char c = (unsigned char)*p;
        if (c >= 0x20 && c != '"' && c != '\\') {
            *o++ = (char)c;
            continue;
        }
        if (c == '"' && q)
            p++;   /* "" -> " */
        *o++ = '\\';
        switch (c) {
        case '"': case '\\': *o++ = (char)c; break;
        case '\n': *o++ = 'n'; break;
        case '\r': *o++ = 'r'; break;
        case '\t': *o++ = 't'; break;
        case '\b': *o++ = 'b'; break;
        case '\f': *o++ = 'f'; break;
        default:
            memcpy(o, "u00", 3);
            o[3] = hex[c >> 4];
            o[4] = hex[c & 15];
            o += 5;
        }
    }
    return o;
}

/* ---- time --------------------------------------------------------------------------- */

static int digits(const char *p, int n, int32_t *v)
{
    int32_t x = 0;
    for (int i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return 0;
        x = x * 10 + (p[i] - '0');
    }
    *v = x;
    return 1;
}

/* days from 1970-01-01 to y-m-d of the proleptic Gregorian calendar */
static int64_t days_from_civil(int64_t y, int32_t m, int32_t d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static int32_t month_days(int32_t y, int32_t m)
{
    static const int8_t n[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return n[m - 1] + (m == 2 && leap);
}

/* YYYY-MM-DDTHH:MM:SS[.f{1,9}]Z -> epoch ns; 0 when malformed or out of range */
static int parse_time(span v, int64_t *ns)
{
    int q;
    v = inner(v, &q);
    const char *p = v.s;
    size_t n = (size_t)(v.e - v.s);
    int32_t y, mo, d, h, mi, s, frac = 0;
    if (n < 20 || p[4] != '-' || p[7] != '-' || p[10] != 'T' || p[13] != ':' || p[16] != ':' ||
        p[n - 1] != 'Z')
        return 0;
    if (!digits(p, 4, &y) || !digits(p + 5, 2, &mo) || !digits(p + 8, 2, &d) || !digits(p + 11, 2, &h) ||
        !digits(p + 14, 2, &mi) || !digits(p + 17, 2, &s))
        return 0;
    if (mo < 1 || mo > 12 || d < 1 || d > month_days(y, mo) || h > 23 || mi > 59 || s > 59)
        return 0;
    if (n > 20) {
        int k = (int)n - 21;   /* fraction digits */
        if (p[19] != '.' || k < 1 || k > 9 || !digits(p + 20, k, &frac))
            return 0;
        for (int i = k; i < 9; i++)
            frac *= 10;
    }
    int64_t secs = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + s, sub = frac, t;
    if (secs < 0 && sub > 0) {   /* so that the earliest ns (INT64_MIN) does not overflow on the way */
        secs++;
        sub -= NS_PER_S;
    }
    if (__builtin_mul_overflow(secs, NS_PER_S, &t) || __builtin_add_overflow(t, sub, &t))
        return 0;
    *ns = t;
    return 1;
}

static int64_t floor_ms(int64_t ns)
{
    int64_t ms = ns / NS_PER_MS;
    return ms - (ns % NS_PER_MS < 0);
}

/* ---- CQL binary values ------------------------------------------------------------- */

static char *put_be32(char *o, uint32_t v)
{
    for (int i = 3; i >= 0; i--, v >>= 8)
        o[i] = (char)(v & 0xff);
    return o + 4;
}

static char *put_be64(char *o, uint64_t v)
{
    for (int i = 7; i >= 0; i--, v >>= 8)
        o[i] = (char)(v & 0xff);
    return o + 8;
}

/* a [bytes] of 4 or 8 bytes */
static char *put_v32(char *o, uint32_t v) { return put_be32(put_be32(o, 4), v); }
static char *put_v64(char *o, uint64_t v) { return put_be64(put_be32(o, 8), v); }

/* the unquoted value copied NUL-terminated into tmp[cap]; 0 when empty or too long */
static size_t number_text(span v, char *tmp, size_t cap)
{
    int q;
    v = inner(v, &q);
    size_t n = (size_t)(v.e - v.s);
    if (n == 0 || n >= cap)
        return 0;
    memcpy(tmp, v.s, n);
    tmp[n] = 0;
    return n;
}

static int parse_double(span v, double *x)
{
    char tmp[64], *end;
    size_t n = number_text(v, tmp, sizeof tmp);
    if (n == 0 || tmp[0] == ' ')
        return 0;
    *x = strtod(tmp, &end);
    return end == tmp + n;
}

static int parse_int64(span v, int64_t *x)
{
    char tmp[32] = {0};
    size_t n = number_text(v, tmp, sizeof tmp), i = tmp[0] == '-' || tmp[0] == '+';
    int64_t r = 0;
    if (n == 0 || i == n)
        return 0;
    for (; i < n; i++) {
        if (tmp[i] < '0' || tmp[i] > '9' || __builtin_mul_overflow(r, 10, &r) ||
            __builtin_add_overflow(r, tmp[0] == '-' ? -(tmp[i] - '0') : tmp[i] - '0', &r))
            return 0;
    }
    *x = r;
    return 1;
}

static int64_t floor_div(int64_t a, int64_t b) { return a / b - (a % b < 0); }

/* ---- BSON element values (little-endian) ----------------------------------------------- */

static char *put_le32(char *o, uint32_t v)
{
    for (int i = 0; i < 4; i++, v >>= 8)
        o[i] = (char)(v & 0xff);
    return o + 4;
}

static char *put_le64(char *o, uint64_t v)
{
    for (int i = 0; i < 8; i++, v >>= 8)
        o[i] = (char)(v & 0xff);
    return o + 8;
}

/* the CSV value unquoted after its 4-byte length: CQL's (big-endian: the bytes) or BSON's
 * (little-endian: the bytes and the final 0 written after them) */
static char *put_sized_text(span v, char *o, int bson)
{
    char *s = o + 4, *e = put_raw(v, s);
    if (bson) {
        *e++ = 0;
        put_le32(o, (uint32_t)(e - s));
    } else {
        put_be32(o, (uint32_t)(e - s));
    }
    return e;
}

/* a number column as the 64 bits of a double or of an int64; TS_OK or TS_ERR_NUMBER */
static int32_t number_bits(int is_double, span v, uint64_t *bits)
{
    double x;
    int64_t i;
    if (is_double ? !parse_double(v, &x) : !parse_int64(v, &i))
        return TS_ERR_NUMBER;
    if (is_double)
        memcpy(bits, &x, 8);
    else
        *bits = (uint64_t)i;
    return TS_OK;
}

/* a BSON value: TS_OK, TS_ERR_NUMBER or TS_ERR_TIME; *o advanced */
static int32_t put_bson(int32_t enc, span v, char **o)
{
    uint64_t bits;
    int64_t ns;
    if (enc == TS_ENC_B_STRING) {
        *o = put_sized_text(v, *o, 1);
        return TS_OK;
    }
    if (enc == TS_ENC_B_DOUBLE || enc == TS_ENC_B_INT64) {
        if (number_bits(enc == TS_ENC_B_DOUBLE, v, &bits) != TS_OK)
            return TS_ERR_NUMBER;
        *o = put_le64(*o, bits);
        return TS_OK;
    }
    if (!parse_time(v, &ns))
        return TS_ERR_TIME;
    if (enc == TS_ENC_B_HOUR)   /* the UTC hour the time falls in */
        *o = put_le64(*o, (uint64_t)(floor_div(ns, 3600 * NS_PER_S) * 3600 * 1000));
    else
        *o = put_le64(*o, (uint64_t)floor_ms(ns));
    return TS_OK;
}

/* ---- rendering ---------------------------------------------------------------------- */

/* bytes op k can write at most for value v */
static uint64_t op_bound(const ts_op *op, span v)
{
    uint64_t len = (uint64_t)(v.e - v.s);
    switch (op->enc) {
    case TS_ENC_JSON: case TS_ENC_JSONIN: return 6 * len + 2;
    case TS_ENC_RAW: return len;
    case TS_ENC_V_TEXT: return len + 4;
    case TS_ENC_B_STRING: return len + 5;
    default: return 24;   /* numbers and dates */
    }
}

/* a CQL binary value of a time column (ns parsed) */
static char *put_time_value(int32_t enc, int64_t ns, char *o)
{
    switch (enc) {
    case TS_ENC_V_NS: return put_v64(o, (uint64_t)ns);
    case TS_ENC_V_MS: return put_v64(o, (uint64_t)floor_ms(ns));
    case TS_ENC_V_SUBMS: return put_v32(o, (uint32_t)(ns - floor_ms(ns) * NS_PER_MS));
    default: return put_v32(o, (uint32_t)(floor_div(ns, 86400 * NS_PER_S) + (INT64_C(1) << 31)));
    }
}

/* a CQL binary value: TS_OK, TS_ERR_NUMBER or TS_ERR_TIME; *o advanced */
static int32_t put_value(int32_t enc, span v, char **o)
{
    uint64_t bits;
    int64_t ns;
    if (is_null(v)) {
        *o = put_be32(*o, (uint32_t)-2);   /* unset: no tombstone */
        return TS_OK;
    }
    if (enc == TS_ENC_V_TEXT) {
        *o = put_sized_text(v, *o, 0);
        return TS_OK;
    }
    if (enc == TS_ENC_V_DOUBLE || enc == TS_ENC_V_BIGINT) {
        if (number_bits(enc == TS_ENC_V_DOUBLE, v, &bits) != TS_OK)
            return TS_ERR_NUMBER;
        *o = put_v64(*o, bits);
        return TS_OK;
    }
    if (!parse_time(v, &ns))
        return TS_ERR_TIME;
    *o = put_time_value(enc, ns, *o);
    return TS_OK;
}

/* one column op: TS_OK, or TS_ERR_TIME / TS_ERR_NUMBER; *o advanced */
static int32_t put_col(const ts_op *op, span v, char **o)
{
    int64_t ns;
    char *p = *o;
    switch (op->enc) {
    case TS_ENC_RAW: *o = put_raw(v, p); return TS_OK;
    case TS_ENC_JSON: *p++ = '"'; p = put_jsonin(v, p); *p++ = '"'; *o = p; return TS_OK;
    case TS_ENC_JSONIN: *o = put_jsonin(v, p); return TS_OK;
    }
    if (op->enc >= TS_ENC_B_DOUBLE)
        return put_bson(op->enc, v, o);
    if (op->enc >= TS_ENC_V_TEXT)
        return put_value(op->enc, v, o);
    if (!parse_time(v, &ns))
        return TS_ERR_TIME;
    switch (op->enc) {
    case TS_ENC_NS: *o = p + ts_fmt_i64(ns, p); break;
    case TS_ENC_MS: *o = p + ts_fmt_i64(floor_ms(ns), p); break;
    case TS_ENC_SUBMS: *o = p + ts_fmt_u64((uint64_t)(ns - floor_ms(ns) * NS_PER_MS), p); break;
    default: memcpy(p, inner(v, &(int){0}).s, 10); *o = p + 10; break;   /* TS_ENC_DAY */
    }
    return TS_OK;
}

/* the values a line's OPENs have begun and not yet closed, innermost last */
#define OPEN_DEPTH 4
typedef struct {
    char *at[OPEN_DEPTH];
    int32_t flavour[OPEN_DEPTH];
    int32_t n;
} open_stack;

/* an OPEN or CLOSE op: the length slot reserved, or the innermost open value's length
 * written (a BSON document's final 0 byte first) */
static int32_t open_close(const ts_op *op, open_stack *st, char **o, const char *lim)
{
    if (op->kind == TS_OP_OPEN) {
        if (st->n == OPEN_DEPTH || (op->enc != TS_OPEN_CQL && op->enc != TS_OPEN_BSON))
            return TS_ERR_ARG;
        if (lim - *o < 4)
            return TS_ERR_SPACE;
        st->at[st->n] = *o;
        st->flavour[st->n++] = op->enc;
        *o += 4;
        return TS_OK;
    }
    if (st->n == 0)
        return TS_ERR_ARG;
    char *at = st->at[--st->n];
    if (st->flavour[st->n] == TS_OPEN_BSON) {
        if (lim - *o < 1)
            return TS_ERR_SPACE;
        *(*o)++ = 0;
        put_le32(at, (uint32_t)(*o - at));
    } else {
        put_be32(at, (uint32_t)(*o - at - 4));
    }
    return TS_OK;
}

/* run the template over one parsed line into out[*used, cap); TS_ERR_SPACE leaves *used */
static int32_t render_line(const ts_template *t, const span *cols, uint32_t ncols, char *out, uint64_t cap,
                           uint64_t *used, int32_t *err_col)
{
    char *o = out + *used, *lim = out + cap;
    open_stack opened = {.n = 0};
    for (int32_t k = 0; k < t->n_ops; k++) {
        const ts_op *op = &t->ops[k];
        int32_t rc;
        if (op->kind == TS_OP_SEP && (o == out + *used || o[-1] == '{' || o[-1] == '['))
            continue;
        if (op->kind == TS_OP_LIT || op->kind == TS_OP_SEP) {
            if ((uint64_t)(lim - o) < op->lit_len)
                return TS_ERR_SPACE;
            memcpy(o, t->lits + op->lit_off, op->lit_len);
            o += op->lit_len;
            continue;
        }
        if (op->kind == TS_OP_OPEN || op->kind == TS_OP_CLOSE) {
            if ((rc = open_close(op, &opened, &o, lim)) != TS_OK)
                return rc;
            continue;
        }
        if ((uint32_t)op->col >= ncols) {
            *err_col = op->col;
            return TS_ERR_COLUMN;
        }
        span v = cols[op->col];
        if (op->kind == TS_OP_IF) {
            if (is_null(v))
                k += op->skip;
            continue;
        }
        if ((uint64_t)(lim - o) < op_bound(op, v))
            return TS_ERR_SPACE;
        if ((rc = put_col(op, v, &o)) != TS_OK) {
            *err_col = op->col;
            return rc;
        }
    }
    if (opened.n)
        return TS_ERR_ARG;
    *used = (uint64_t)(o - out);
    return TS_OK;
}

int32_t ts_render(const ts_template *t, const char *buf, uint64_t len, char *out, uint64_t out_cap,
                  uint64_t *ends, uint64_t ends_cap, ts_span *cols, uint32_t cols_cap, ts_render_state *st)
{
    if (!t || !buf || !out || !ends || !cols || !st || (uint32_t)t->max_col >= cols_cap ||
        st->in_used > len || st->out_used > out_cap)
        return TS_ERR_ARG;
    const char *end = buf + len;
    const char *p = buf + st->in_used;
    span *sp = cols;
    while (p < end) {
        const char *next;
        uint32_t n;
        int32_t rc = parse_record(p, end, sp, cols_cap, &n, &next);
        if (rc == TS_OK && !(n == 1 && is_null(sp[0]))) {   /* a blank line renders nothing */
            if (st->lines >= ends_cap)
                return TS_ERR_SPACE;
            rc = render_line(t, sp, n < cols_cap ? n : cols_cap, out, out_cap, &st->out_used, &st->err_col);
            if (rc == TS_OK)
                ends[st->lines++] = st->out_used;
        }
        if (rc != TS_OK) {
            st->err_pos = (uint64_t)(p - buf);
            return rc;
        }
        p = next;
        st->in_used = (uint64_t)(p - buf);
    }
    return TS_OK;
}
