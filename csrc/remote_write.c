/* Prometheus remote-write 1.0 bodies (phase 2: load): the points of a batch of line protocol,
 * as ts_lp_scan_lines read them, grouped by series into one WriteRequest protobuf (tsbench.h,
 * ts_rw_encode). No globals, no allocation: the hash table and lists are caller scratch.
 *
 * The mapping (Telegraf's Prometheus naming): one series per (measurement, field, tag set),
 * named __name__ = measurement_field, the tags as labels, labels sorted by name; characters a
 * name may not hold become '_' (metric names [a-zA-Z_:][a-zA-Z0-9_:]*, label names
 * [a-zA-Z_][a-zA-Z0-9_]*); values as doubles (integers converted, booleans 0/1), times in ms
 * (floor); string fields have no sample (counted). The messages:
 *   WriteRequest { repeated TimeSeries timeseries = 1; }
 *   TimeSeries { repeated Label labels = 1; repeated Sample samples = 2; }
 *   Label { string name = 1; string value = 2; }   Sample { double value = 1; int64 timestamp = 2; } */

#include <string.h>

#include "tsbench.h"

#define MAX_LABELS 256
#define NIL UINT64_MAX

enum { N_RAW = 0, N_METRIC = 1, N_LABEL = 2 };   /* how a text is sanitized */

/* one label's text as written in the line: name (escaped) and value (escaped) */
typedef struct {
    const char *n, *v;
    uint32_t nlen, vlen;
    int is_name;            /* the __name__ label: its value is measurement '_' field */
} label_src;

static inline uint64_t mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static inline unsigned varint_len(uint64_t v)
{
    unsigned n = 1;
    while (v >= 0x80) { v >>= 7; n++; }
    return n;
}

static inline char *put_varint(char *o, uint64_t v)
{
    while (v >= 0x80) { *o++ = (char)(v | 0x80); v >>= 7; }
    *o++ = (char)v;
    return o;
}

static inline int allowed(unsigned char c, int how, int first)
{
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_')
        return 1;
    if (c >= '0' && c <= '9')
        return !first;
    return c == ':' && how == N_METRIC;
}

/* the text of [p, e) unescaped (a backslash before ',', '=' or ' ' dropped) and sanitized as
 * `how` says, into o (NULL: only counted); `first`: the text starts a name. Returns its length */
static uint32_t decode(const char *p, const char *e, int how, int first, char *o)
{
    uint32_t n = 0;
    while (p < e) {
        unsigned char c = (unsigned char)*p++;
        if (c == '\\' && p < e && (*p == ',' || *p == '=' || *p == ' '))
            c = (unsigned char)*p++;
        if (how != N_RAW && !allowed(c, how, first && n == 0))
            c = '_';
        if (o)
            o[n] = (char)c;
        n++;
    }
    return n;
}

/* the next byte of an escaped name at *p (sanitized as a label name; pos: bytes before it) */
static inline unsigned char next_byte(const char **p, const char *e, uint32_t pos)
{
    unsigned char c = (unsigned char)*(*p)++;
    if (c == '\\' && *p < e && (**p == ',' || **p == '=' || **p == ' '))
        c = (unsigned char)*(*p)++;
    return allowed(c, N_LABEL, pos == 0) ? c : '_';
}

/* byte order of two labels' names as written (unescaped, sanitized) */
static int name_cmp(const label_src *a, const label_src *b)
{
    const char *pa = a->n, *ea = a->n + a->nlen, *pb = b->n, *eb = b->n + b->nlen;
    for (uint32_t pos = 0; pa < ea && pb < eb; pos++) {
        unsigned char ca = a->is_name ? (unsigned char)*pa++ : next_byte(&pa, ea, pos);
        unsigned char cb = b->is_name ? (unsigned char)*pb++ : next_byte(&pb, eb, pos);
        if (ca != cb)
            return ca < cb ? -1 : 1;
    }
    return (pa < ea) - (pb < eb);
}

typedef struct {
    const ts_lp_scan *s;
    const char *buf;
    uint64_t h_mask;
    uint64_t *table;       /* series id + 1, 0: empty */
    uint64_t *s_point, *s_field, *s_head, *s_tail, *s_hash;
    uint64_t *next;        /* per field entry: the next entry of its series, NIL: none */
    uint64_t *point_of;    /* per field entry: its point */
    uint64_t n_series;
} rw_ctx;

static int same_series(const rw_ctx *c, uint64_t p, uint64_t f, uint64_t q, uint64_t g)
{
    const ts_lp_scan *s = c->s;
    uint64_t tp = p ? s->tag_end[p - 1] : 0, tq = q ? s->tag_end[q - 1] : 0;
    if (s->meas_len[p] != s->meas_len[q] || s->field_klen[f] != s->field_klen[g]
        || s->tag_end[p] - tp != s->tag_end[q] - tq)
        return 0;
    if (memcmp(c->buf + s->meas_off[p], c->buf + s->meas_off[q], s->meas_len[p]) != 0
        || memcmp(c->buf + s->field_off[f], c->buf + s->field_off[g], s->field_klen[f]) != 0)
        return 0;
    for (uint64_t i = 0; i < s->tag_end[p] - tp; i++)
        if (s->tag_key[tp + i] != s->tag_key[tq + i] || s->tag_val[tp + i] != s->tag_val[tq + i])
            return 0;
    return 1;
}

/* field entry f of point p joins its series (a new one in first-seen order when none) */
static void add_entry(rw_ctx *c, uint64_t p, uint64_t f)
{
    uint64_t h = mix64(c->s->series[p] ^ mix64(c->s->field_key[f] + 0x9e3779b97f4a7c15ULL));
    for (uint64_t slot = h & c->h_mask;; slot = (slot + 1) & c->h_mask) {
        uint64_t id = c->table[slot];
        if (id == 0) {
            id = c->n_series++;
            c->table[slot] = id + 1;
            c->s_point[id] = p, c->s_field[id] = f, c->s_hash[id] = h;
            c->s_head[id] = c->s_tail[id] = f;
            c->next[f] = NIL;
            return;
        }
        id--;
        if (c->s_hash[id] == h && same_series(c, c->s_point[id], c->s_field[id], p, f)) {
            c->next[c->s_tail[id]] = f;
            c->s_tail[id] = f;
            c->next[f] = NIL;
            return;
        }
    }
}

/* series id's labels, sorted by name (insertion sort: a handful each) */
static int32_t series_labels(const rw_ctx *c, uint64_t id, label_src *l, uint32_t *n)
{
    const ts_lp_scan *s = c->s;
    uint64_t p = c->s_point[id], t0 = p ? s->tag_end[p - 1] : 0, nt = s->tag_end[p] - t0;
    if (nt + 1 > MAX_LABELS)
        return TS_ERR_ARG;
    l[0] = (label_src){"__name__", NULL, 8, 0, 1};
    for (uint64_t i = 0; i < nt; i++) {
        const char *k = c->buf + s->tag_off[t0 + i];
        label_src x = {k, k + s->tag_klen[t0 + i] + 1, s->tag_klen[t0 + i], s->tag_vlen[t0 + i], 0};
        uint64_t j = i + 1;
        for (; j > 0 && name_cmp(&l[j - 1], &x) > 0; j--)
            l[j] = l[j - 1];
        l[j] = x;
    }
    *n = (uint32_t)nt + 1;
    return TS_OK;
}

static uint32_t name_value_len(const rw_ctx *c, uint64_t id)
{
    const ts_lp_scan *s = c->s;
    uint64_t p = c->s_point[id], f = c->s_field[id];
    const char *m = c->buf + s->meas_off[p], *k = c->buf + s->field_off[f];
    return decode(m, m + s->meas_len[p], N_METRIC, 1, NULL) + 1
           + decode(k, k + s->field_klen[f], N_METRIC, 0, NULL);
}

static char *put_name_value(const rw_ctx *c, uint64_t id, char *o)
{
    const ts_lp_scan *s = c->s;
    uint64_t p = c->s_point[id], f = c->s_field[id];
    const char *m = c->buf + s->meas_off[p], *k = c->buf + s->field_off[f];
    o += decode(m, m + s->meas_len[p], N_METRIC, 1, o);
    *o++ = '_';
    return o + decode(k, k + s->field_klen[f], N_METRIC, 0, o);
}

static inline int64_t ms_floor(int64_t ns)
{
    return ns / 1000000 - (ns % 1000000 < 0);
}

static double value_of(const ts_lp_scan *s, uint64_t f)
{
    int64_t bits = s->field_value[f];
    double d;
    switch (s->field_type[f]) {
    case TS_LP_INT: return (double)bits;
    case TS_LP_UINT: return (double)(uint64_t)bits;
    case TS_LP_BOOL: return bits ? 1.0 : 0.0;
    default: memcpy(&d, &bits, 8); return d;
    }
}

static uint64_t label_len(uint32_t nl, uint32_t vl)
{
    return 1 + varint_len(nl) + nl + 1 + varint_len(vl) + vl;
}

/* the bytes of series id's TimeSeries message (inside) */
static uint64_t series_len(const rw_ctx *c, uint64_t id, const label_src *l, uint32_t nl, uint32_t name_vlen)
{
    uint64_t len = 0;
    for (uint32_t i = 0; i < nl; i++) {
        uint32_t n = l[i].is_name ? 8 : decode(l[i].n, l[i].n + l[i].nlen, N_LABEL, 1, NULL);
        uint32_t v = l[i].is_name ? name_vlen : decode(l[i].v, l[i].v + l[i].vlen, N_RAW, 0, NULL);
        uint64_t ll = label_len(n, v);
        len += 1 + varint_len(ll) + ll;
    }
    for (uint64_t f = c->s_head[id]; f != NIL; f = c->next[f]) {
        uint64_t sl = 10 + varint_len((uint64_t)ms_floor(c->s->time[c->point_of[f]]));
        len += 1 + varint_len(sl) + sl;
    }
    return len;
}

static char *put_label(char *o, const char *n, uint32_t nl, uint32_t vl)
{
    uint64_t ll = label_len(nl, vl);
    *o++ = 0x0a;
    o = put_varint(o, ll);
    *o++ = 0x0a;
    o = put_varint(o, nl);
    memcpy(o, n, nl);
    o += nl;
    *o++ = 0x12;
    return put_varint(o, vl);
}

/* series id's TimeSeries message (inside) at o */
static char *put_series(const rw_ctx *c, uint64_t id, const label_src *l, uint32_t nl, uint32_t name_vlen,
                        char *o)
{
    for (uint32_t i = 0; i < nl; i++) {
        if (l[i].is_name) {
            o = put_name_value(c, id, put_label(o, "__name__", 8, name_vlen));
            continue;
        }
        uint32_t n = decode(l[i].n, l[i].n + l[i].nlen, N_LABEL, 1, NULL);
        uint32_t v = decode(l[i].v, l[i].v + l[i].vlen, N_RAW, 0, NULL);
        uint64_t ll = label_len(n, v);
        *o++ = 0x0a;
        o = put_varint(o, ll);
        *o++ = 0x0a;
        o = put_varint(o, n);
        o += decode(l[i].n, l[i].n + l[i].nlen, N_LABEL, 1, o);
        *o++ = 0x12;
        o = put_varint(o, v);
        o += decode(l[i].v, l[i].v + l[i].vlen, N_RAW, 0, o);
    }
    for (uint64_t f = c->s_head[id]; f != NIL; f = c->next[f]) {
        uint64_t ms = (uint64_t)ms_floor(c->s->time[c->point_of[f]]);
        double d = value_of(c->s, f);
        uint64_t bits;
        memcpy(&bits, &d, 8);
        *o++ = 0x12;
        o = put_varint(o, 10 + varint_len(ms));
        *o++ = 0x09;
        for (int b = 0; b < 8; b++)
            *o++ = (char)(bits >> (8 * b));          /* fixed64, little-endian */
        *o++ = 0x10;
        o = put_varint(o, ms);
    }
    return o;
}

uint64_t ts_rw_scratch(uint64_t n_fields)
{
    uint64_t h = 16;
    while (h < 2 * n_fields)
        h <<= 1;
    return h + 7 * n_fields;
}

/* group the scan's field entries by series (string fields left out) */
static void group(rw_ctx *c, ts_rw_out *res)
{
    const ts_lp_scan *s = c->s;
    for (uint64_t p = 0, f = 0; p < s->points; p++)
        for (; f < s->field_end[p]; f++) {
            c->point_of[f] = p;
            if (s->field_type[f] == TS_LP_STRING)
                res->skipped++;
            else
                add_entry(c, p, f);
        }
}

int32_t ts_rw_encode(const ts_lp_scan *s, const char *buf, char *out, uint64_t cap,
                     uint64_t *scratch, uint64_t scratch_cap, ts_rw_out *res)
{
    uint64_t n = s ? s->fields : 0;
    if (!s || !buf || !res || !scratch || scratch_cap < ts_rw_scratch(n) || (cap && !out))
        return TS_ERR_ARG;
    uint64_t h = ts_rw_scratch(n) - 7 * n;
    rw_ctx c = {s, buf, h - 1, scratch, scratch + h, scratch + h + n, scratch + h + 2 * n,
                scratch + h + 3 * n, scratch + h + 4 * n, scratch + h + 5 * n, scratch + h + 6 * n, 0};
    memset(scratch, 0, h * sizeof *scratch);
    memset(res, 0, sizeof *res);
    group(&c, res);
    label_src l[MAX_LABELS];
    uint64_t used = 0;
    for (uint64_t id = 0; id < c.n_series; id++) {
        uint32_t nl;
        if (series_labels(&c, id, l, &nl) != TS_OK)
            return TS_ERR_ARG;
        uint32_t name_vlen = name_value_len(&c, id);
        uint64_t len = series_len(&c, id, l, nl, name_vlen);
        uint64_t whole = 1 + varint_len(len) + len;
        if (used + whole <= cap) {
            char *o = out + used;
            *o++ = 0x0a;
            o = put_varint(o, len);
            put_series(&c, id, l, nl, name_vlen, o);
        }
        used += whole;
        for (uint64_t f = c.s_head[id]; f != NIL; f = c.next[f])
            res->samples++;
    }
    res->used = used;
    res->series = c.n_series;
    return used <= cap ? TS_OK : TS_ERR_SPACE;
}
