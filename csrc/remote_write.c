/* Prometheus remote-write 1.0 bodies (phase 2: load): the points of a batch of line protocol,
 * as ts_lp_scan_lines read them, grouped by series into one WriteRequest protobuf (tsbench.h,
 * ts_rw_encode). No globals, no allocation: the hash table and lists are caller scratch.
 *
 * The mapping (Telegraf's Prometheus naming): one series per (measurement, field, tag set),
 * named __name__ = measurement_field, the tags as labels, labels sorted by name; characters a
 * name may not hold become '_' (metric names [a-zA-Z_:][a-zA-Z0-9_:]*, label names
 * [a-zA-Z_][a-zA-Z0-9_]*); values as doubles (integers converted, booleans 0/1), times in ms
 * (floor); string fields have no sample (counted). Fields are written as proto3 writes them (a
 * value 0 or a time 0 left out), so a protobuf library's encoding of the same message is the
 * same bytes. The messages:
 *   WriteRequest { repeated TimeSeries timeseries = 1; }
 *   TimeSeries { repeated Label labels = 1; repeated Sample samples = 2; }
 *   Label { string name = 1; string value = 2; }   Sample { double value = 1; int64 timestamp = 2; } */

#include <string.h>

#include "pb_wire.h"
#include "series_group.h"

#define MAX_LABELS 256

enum { N_RAW = 0, N_METRIC = 1, N_LABEL = 2 };   /* how a text is sanitized */

/* one label's text as written in the line: name (escaped) and value (escaped) */
typedef struct {
    const char *n, *v;
    uint32_t nlen, vlen;
    int is_name;            /* the __name__ label: its value is measurement '_' field */
} label_src;

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

/* series id's labels, sorted by name (insertion sort: a handful each) */
static int32_t series_labels(const ts_sg *c, uint64_t id, label_src *l, uint32_t *n)
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

static uint32_t name_value_len(const ts_sg *c, uint64_t id)
{
    const ts_lp_scan *s = c->s;
    uint64_t p = c->s_point[id], f = c->s_field[id];
    const char *m = c->buf + s->meas_off[p], *k = c->buf + s->field_off[f];
    return decode(m, m + s->meas_len[p], N_METRIC, 1, NULL) + 1
           + decode(k, k + s->field_klen[f], N_METRIC, 0, NULL);
}

static char *put_name_value(const ts_sg *c, uint64_t id, char *o)
{
    const ts_lp_scan *s = c->s;
    uint64_t p = c->s_point[id], f = c->s_field[id];
    const char *m = c->buf + s->meas_off[p], *k = c->buf + s->field_off[f];
    o += decode(m, m + s->meas_len[p], N_METRIC, 1, o);
    *o++ = '_';
    return o + decode(k, k + s->field_klen[f], N_METRIC, 0, o);
}

/* a Sample's bytes: as proto3 writes it, a field of value 0 (the bits of +0.0, time 0) left out */
static inline uint64_t sample_len(uint64_t ms, uint64_t bits)
{
    return (bits ? 9 : 0) + (ms ? 1 + varint_len(ms) : 0);
}

static uint64_t label_len(uint32_t nl, uint32_t vl)
{
    return 1 + varint_len(nl) + nl + 1 + varint_len(vl) + vl;
}

/* a tag set's labels (all but __name__) as they go on the wire, kept while its series follow
 * each other (a point's fields make consecutive series): the bytes before __name__'s place and
 * after it, and where the last series wrote them (NULL: not written yet) */
typedef struct {
    uint64_t tagset;       /* TS_SG_NIL: none */
    label_src l[MAX_LABELS];
    uint32_t nl, name_at;  /* labels; the index of __name__ among them */
    uint64_t pre_len, post_len;
    const char *pre, *post;
} tag_labels;

static uint64_t tag_label_len(const label_src *l)
{
    uint64_t ll = label_len(decode(l->n, l->n + l->nlen, N_LABEL, 1, NULL), decode(l->v, l->v + l->vlen, N_RAW, 0, NULL));
    return 1 + varint_len(ll) + ll;
}

/* t holds series id's tag set's labels (sorted, measured) */
static int32_t tags_for(const ts_sg *c, uint64_t id, tag_labels *t)
{
    if (t->tagset == c->s_tagset[id])
        return TS_OK;
    if (series_labels(c, id, t->l, &t->nl) != TS_OK)
        return TS_ERR_ARG;
    t->tagset = c->s_tagset[id];
    t->pre_len = t->post_len = 0;
    t->pre = t->post = NULL;
    for (t->name_at = 0; !t->l[t->name_at].is_name; t->name_at++)
        t->pre_len += tag_label_len(&t->l[t->name_at]);
    for (uint32_t i = t->name_at + 1; i < t->nl; i++)
        t->post_len += tag_label_len(&t->l[i]);
    return TS_OK;
}

/* the bytes of series id's TimeSeries message (inside) */
static uint64_t series_len(const ts_sg *c, uint64_t id, const tag_labels *t, uint32_t name_vlen)
{
    uint64_t nl = label_len(8, name_vlen), len = t->pre_len + 1 + varint_len(nl) + nl + t->post_len;
    return len + c->s_bytes[id];
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

/* labels [from, to) of t at o, unescaped */
static char *put_tags(const label_src *l, uint32_t from, uint32_t to, char *o)
{
    for (uint32_t i = from; i < to; i++) {
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
    return o;
}

/* the tag labels before (post 0) or after (1) __name__: copied when written before */
static char *put_part(tag_labels *t, int post, char *o)
{
    const char **at = post ? &t->post : &t->pre;
    uint64_t len = post ? t->post_len : t->pre_len;
    if (*at) {
        memcpy(o, *at, len);
        return o + len;
    }
    *at = o;
    return post ? put_tags(t->l, t->name_at + 1, t->nl, o) : put_tags(t->l, 0, t->name_at, o);
}

/* series id's TimeSeries message (inside) at o */
static char *put_series(const ts_sg *c, uint64_t id, tag_labels *t, uint32_t name_vlen, char *o)
{
    o = put_part(t, 0, o);
    o = put_name_value(c, id, put_label(o, "__name__", 8, name_vlen));
    o = put_part(t, 1, o);
    for (uint64_t k = c->s_start[id]; k < c->s_end[id]; k++) {
        uint64_t ms = c->time[k], bits = c->bits[k];
        *o++ = 0x12;
        o = put_varint(o, sample_len(ms, bits));
        if (bits) {
            *o++ = 0x09;
            o = put_fixed64(o, bits);
        }
        if (ms) {
            *o++ = 0x10;
            o = put_varint(o, ms);
        }
    }
    return o;
}

uint64_t ts_rw_scratch(uint64_t n_fields)
{
    return ts_sg_scratch(n_fields);
}

/* each series' Samples' bytes on the wire into s_bytes (its samples sorted in ms) */
static void measure_samples(ts_sg *c)
{
    for (uint64_t id = 0; id < c->n_series; id++) {
        uint64_t bytes = 0;
        for (uint64_t k = c->s_start[id]; k < c->s_end[id]; k++) {
            uint64_t sl = sample_len(c->time[k], c->bits[k]);
            bytes += 1 + varint_len(sl) + sl;
        }
        c->s_bytes[id] = bytes;
    }
}

int32_t ts_rw_encode(const ts_lp_scan *s, const char *buf, char *out, uint64_t cap,
                     uint64_t *scratch, uint64_t scratch_cap, ts_rw_out *res)
{
    uint64_t n = s ? s->fields : 0;
    if (!s || !buf || !res || !scratch || scratch_cap < ts_rw_scratch(n) || (cap && !out))
        return TS_ERR_ARG;
    ts_sg c;
    ts_sg_init(&c, s, buf, scratch);
    memset(res, 0, sizeof *res);
    res->skipped = ts_sg_group(&c);
    ts_sg_sort(&c, 1000000);
    measure_samples(&c);
    static const tag_labels none = {.tagset = TS_SG_NIL};
    tag_labels t = none;
    uint64_t used = 0;
    for (uint64_t id = 0; id < c.n_series; id++) {
        if (tags_for(&c, id, &t) != TS_OK)
            return TS_ERR_ARG;
        uint32_t name_vlen = name_value_len(&c, id);
        uint64_t len = series_len(&c, id, &t, name_vlen);
        uint64_t whole = 1 + varint_len(len) + len;
        if (used + whole <= cap) {
            char *o = out + used;
            *o++ = 0x0a;
            o = put_varint(o, len);
            put_series(&c, id, &t, name_vlen, o);
        } else {
            t.pre = t.post = NULL;             /* nothing written from here on to copy */
        }
        used += whole;
    }
    res->used = used;
    res->series = c.n_series;
    res->samples = n - res->skipped;
    return used <= cap ? TS_OK : TS_ERR_SPACE;
}
