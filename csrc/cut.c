/* Batch cutting for the load phase: find whole records in a buffer read from
 * a data file, count rows and values, and split CSV by measurement. Scans use
 * memchr and a 16-byte compare loop (SSE2: matches summed per lane, no popcount);
 * a slow byte-by-byte path handles quoted strings and escapes in influx lines. */

#define _GNU_SOURCE
#include <string.h>

#include "tsbench.h"

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#ifdef __SSE2__
/* how many bytes equal c in the 16-byte blocks of [p, p + 16 * blocks); *odd gets the
 * blocks' bytes equal to '"' or '\\' ORed together (non-zero: some). Matches are summed
 * per byte lane (at most 255 blocks at a time) and the lanes added by _mm_sad_epu8. */
static uint64_t count_blocks(const char *p, size_t blocks, char c, unsigned *odd)
{
    const __m128i v = _mm_set1_epi8(c), q = _mm_set1_epi8('"'), b = _mm_set1_epi8('\\');
    const __m128i zero = _mm_setzero_si128();
    __m128i total = zero, seen = zero;
    while (blocks) {
        size_t k = blocks < 255 ? blocks : 255;
        __m128i lanes = zero;
        for (size_t i = 0; i < k; i++, p += 16) {
            __m128i x = _mm_loadu_si128((const __m128i *)p);
            lanes = _mm_sub_epi8(lanes, _mm_cmpeq_epi8(x, v));
            seen = _mm_or_si128(seen, _mm_or_si128(_mm_cmpeq_epi8(x, q), _mm_cmpeq_epi8(x, b)));
        }
        total = _mm_add_epi64(total, _mm_sad_epu8(lanes, zero));
        blocks -= k;
    }
    *odd |= (unsigned)_mm_movemask_epi8(seen);
    return (uint64_t)_mm_cvtsi128_si64(total) + (uint64_t)_mm_cvtsi128_si64(_mm_unpackhi_epi64(total, total));
}
#endif

/* how many bytes of [p, p + n) equal c; *odd non-zero when one of them is '"' or '\\' */
static uint64_t count_byte(const char *p, size_t n, char c, unsigned *odd)
{
    uint64_t cnt = 0;
#ifdef __SSE2__
    cnt = count_blocks(p, n / 16, c, odd);
    p += n - n % 16;
    n %= 16;
#endif
    for (; n--; p++) {
        cnt += (*p == c);
        *odd |= (*p == '"' || *p == '\\');
    }
    return cnt;
}

/* influx fields of line [s, e), careful path: escapes and quoted strings */
static uint64_t influx_values_slow(const char *s, const char *e)
{
    const char *p = s;
    /* skip measurement and tags: up to the first unescaped space */
    while (p < e && *p != ' ') {
        if (*p == '\\' && p + 1 < e)
            p++;
        p++;
    }
    if (p >= e)
        return 0;
    p++;
    uint64_t n = 1;
    int quoted = 0;
    for (; p < e; p++) {
        char c = *p;
        if (c == '\\' && p + 1 < e) {
            p++;
            continue;
        }
        if (c == '"')
            quoted = !quoted;
        else if (!quoted && c == ',')
            n++;
        else if (!quoted && c == ' ')
            break;
    }
    return n;
}

/* influx fields of line [s, e) (no newline): the commas after the first space and before
 * the last, plus one, counted in one pass; a quote or backslash takes the careful path */
static uint64_t influx_values(const char *s, const char *e)
{
    const char *sp1 = memchr(s, ' ', (size_t)(e - s));
    if (!sp1 || (sp1 > s && sp1[-1] == '\\'))
        return influx_values_slow(s, e);
    const char *f = sp1 + 1;
    size_t n = (size_t)(e - f);
    unsigned odd = 0;
    uint64_t commas = count_byte(f, n, ',', &odd);
    if (odd)
        return influx_values_slow(s, e);
    const char *sp2 = memrchr(f, ' ', n);
    if (sp2)
        commas -= count_byte(sp2, (size_t)(e - sp2), ',', &odd);
    return commas + 1;
}

/* which layout measurement a csv line [s, e) starts with; -1 if none */
static int32_t csv_table(const ts_csv_layout *L, const char *s, const char *e, int32_t hint)
{
    const char *c = memchr(s, ',', (size_t)(e - s));
    size_t len = c ? (size_t)(c - s) : (size_t)(e - s);
    if (hint >= 0 && (size_t)(L->name_off[hint + 1] - L->name_off[hint]) == len &&
        memcmp(L->names + L->name_off[hint], s, len) == 0)
        return hint;
    for (uint32_t i = 0; i < L->n; i++)
        if ((size_t)(L->name_off[i + 1] - L->name_off[i]) == len && memcmp(L->names + L->name_off[i], s, len) == 0)
            return (int32_t)i;
    return -1;
}

/* the end of a quoted csv column starting at p ('"'), past its closing quote ("" is a quote) */
static const char *csv_quoted_end(const char *p, const char *e)
{
    for (p++; p < e; p++) {
        if (*p != '"')
            continue;
        if (p + 1 < e && p[1] == '"')
            p++;
        else
            return p + 1;
    }
    return e;
}

/* non-empty columns of a csv line [s, e) after the first `skip` columns (a skipped column
 * may be quoted: a tag value of an imported file holding a comma) */
static uint64_t csv_values(const char *s, const char *e, uint32_t skip)
{
    const char *p = s;
    for (uint32_t k = 0; k < skip; k++) {
        if (p < e && *p == '"')
            p = csv_quoted_end(p, e);
        const char *c = memchr(p, ',', (size_t)(e - p));
        if (!c)
            return 0;
        p = c + 1;
    }
    uint64_t n = 0;
    const char *col = p;
    for (;; p++) {
        if (p == e || *p == ',') {
            n += (p > col);
            if (p == e)
                return n;
            col = p + 1;
        }
    }
}

int32_t ts_cut(int32_t fmt, const ts_csv_layout *layout, const char *buf, uint64_t len,
               uint64_t max_rows, int32_t final, ts_cut_result *out)
{
    if (!buf || !out || fmt < 0 || fmt >= TS_FMT_COUNT)
        return -1;
    const char *p = buf, *end = buf + len;
    uint64_t rows = 0, values = 0;
    int32_t hint = -1;
    while (rows < max_rows && p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl;
        if (!nl) {
            if (!final)
                break;
            le = end;
        }
        if (le > p && le[-1] == '\r')
            le--;
        if (le > p) {
            rows++;
            if (fmt == TS_FMT_INFLUX) {
                values += influx_values(p, le);
            } else if (layout) {
                int32_t t = csv_table(layout, p, le, hint);
                if (t < 0) {
                    out->bytes = (uint64_t)(p - buf);
                    out->rows = rows - 1;
                    out->values = values;
                    return -4;
                }
                hint = t;
                values += csv_values(p, le, 2 + layout->n_tags[t]);
            }
        }
        p = nl ? nl + 1 : end;
    }
    out->bytes = (uint64_t)(p - buf);
    out->rows = rows;
    out->values = values;
    return 0;
}

int32_t ts_split_csv(const ts_csv_layout *L, const char *buf, uint64_t len,
                     char *dst, uint64_t dst_cap, ts_part_out *parts, uint64_t *err_pos)
{
    if (!L || !buf || !dst || !parts || dst_cap < len)
        return -1;
    const char *end = buf + len;
    for (uint32_t i = 0; i < L->n; i++)
        parts[i] = (ts_part_out){0, 0, 0, 0};
    /* pass 1: bytes per measurement */
    int32_t hint = -1;
    for (const char *p = buf; p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        if (le > p) {
            int32_t t = csv_table(L, p, le, hint);
            if (t < 0) {
                if (err_pos)
                    *err_pos = (uint64_t)(p - buf);
                return -4;
            }
            hint = t;
            uint64_t name = L->name_off[t + 1] - L->name_off[t];
            uint64_t linelen = (uint64_t)(le - p);
            /* drop "name," and keep a newline */
            parts[t].bytes += (linelen > name ? linelen - name - 1 : 0) + 1;
            parts[t].rows++;
            parts[t].values += csv_values(p, le, 2 + L->n_tags[t]);
        }
        p = nl ? nl + 1 : end;
    }
    uint64_t off = 0;
    for (uint32_t i = 0; i < L->n; i++) {
        parts[i].offset = off;
        off += parts[i].bytes;
    }
    if (off > dst_cap)
        return -3;
    /* pass 2: copy */
    uint64_t *fill = (uint64_t *)__builtin_alloca(sizeof(uint64_t) * (L->n ? L->n : 1));
    for (uint32_t i = 0; i < L->n; i++)
        fill[i] = parts[i].offset;
    hint = -1;
    for (const char *p = buf; p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        if (le > p) {
            int32_t t = csv_table(L, p, le, hint);
            hint = t;
            uint64_t name = L->name_off[t + 1] - L->name_off[t];
            uint64_t linelen = (uint64_t)(le - p);
            if (linelen > name + 1) {
                memcpy(dst + fill[t], p + name + 1, linelen - name - 1);
                fill[t] += linelen - name - 1;
            }
            dst[fill[t]++] = '\n';
        }
        p = nl ? nl + 1 : end;
    }
    return 0;
}

/* ---- spreading a batch over several servers by series (phase 2) ---------------------- */

static uint64_t fnv1a(uint64_t h, const char *s, const char *e)
{
    for (; s < e; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ULL;
    }
    return h;
}

/* the columns of csv line [s, e) from column `from` up to (not with) column `to`, as [*b, *q) */
static void csv_columns(const char *s, const char *e, uint32_t from, uint32_t to, const char **b, const char **q)
{
    const char *p = s;
    for (uint32_t k = 0; k < to && p < e; k++) {
        if (k == from)
            *b = p;
        const char *c = memchr(p, ',', (size_t)(e - p));
        p = c ? c + 1 : e;
    }
    if (from >= to || *b == NULL)
        *b = p;
    *q = p;
}

/* the part of line [s, e): the hash of its series key mod n (influx: the measurement and
 * tags, up to the first unescaped space; csv: the measurement column and the tag
 * columns); -1 for a csv measurement the layout lacks */
static int32_t part_of(int32_t fmt, const ts_csv_layout *L, const char *s, const char *e, uint32_t n,
                       int32_t *hint)
{
    uint64_t h = 1469598103934665603ULL;
    if (fmt == TS_FMT_INFLUX) {
        const char *p = s;
        while (p < e && !(*p == ' ' && (p == s || p[-1] != '\\')))
            p++;
        h = fnv1a(h, s, p);
    } else {
        int32_t t = csv_table(L, s, e, *hint);
        if (t < 0)
            return -1;
        *hint = t;
        const char *c = memchr(s, ',', (size_t)(e - s));
        const char *b = NULL, *q = NULL;
        h = fnv1a(h, s, c ? c : e);
        csv_columns(s, e, 2, 2 + L->n_tags[t], &b, &q);
        h = fnv1a(h, b, q);
    }
    return (int32_t)(h % n);
}

int32_t ts_route_series(int32_t fmt, const ts_csv_layout *L, const char *buf, uint64_t len, uint32_t n,
                        char *dst, uint64_t dst_cap, ts_part_out *parts, uint64_t *err_pos)
{
    if (!buf || !dst || !parts || n < 1 || fmt < 0 || fmt >= TS_FMT_COUNT || (fmt != TS_FMT_INFLUX && !L) ||
        dst_cap < len + 1)
        return -1;
    const char *end = buf + len;
    for (uint32_t i = 0; i < n; i++)
        parts[i] = (ts_part_out){0, 0, 0, 0};
    int32_t hint = -1;
    for (const char *p = buf; p < end;) {           /* pass 1: bytes, rows and values per part */
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        if (le > p) {
            int32_t k = part_of(fmt, L, p, le, n, &hint);
            if (k < 0) {
                if (err_pos)
                    *err_pos = (uint64_t)(p - buf);
                return -4;
            }
            parts[k].bytes += (uint64_t)(le - p) + 1;
            parts[k].rows++;
            parts[k].values += fmt == TS_FMT_INFLUX ? influx_values(p, le) : csv_values(p, le, 2 + L->n_tags[hint]);
        }
        p = nl ? nl + 1 : end;
    }
    uint64_t off = 0;
    for (uint32_t i = 0; i < n; i++) {
        parts[i].offset = off;
        off += parts[i].bytes;
    }
    uint64_t *fill = (uint64_t *)__builtin_alloca(sizeof(uint64_t) * n);
    for (uint32_t i = 0; i < n; i++)
        fill[i] = parts[i].offset;
    hint = -1;
    for (const char *p = buf; p < end;) {           /* pass 2: each line, whole, to its part */
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        if (le > p) {
            int32_t k = part_of(fmt, L, p, le, n, &hint);
            memcpy(dst + fill[k], p, (size_t)(le - p));
            fill[k] += (uint64_t)(le - p);
            dst[fill[k]++] = '\n';
        }
        p = nl ? nl + 1 : end;
    }
    return 0;
}
