/* The points of a line protocol batch grouped by series (phase 2: load), for the protobuf
 * encoders (series_group.h). Tag sets are found by the scan's series hash in an open-addressing
 * table, then a point's fields by their place in its tag set's first point, else by a hash of
 * the tag set and field key. */

#include <string.h>

#include "mix.h"
#include "series_group.h"

/* points p and q have the same measurement and tags (in the same order) */
static int same_tagset(const ts_sg *c, uint64_t p, uint64_t q)
{
    const ts_lp_scan *s = c->s;
    uint64_t tp = p ? s->tag_end[p - 1] : 0, tq = q ? s->tag_end[q - 1] : 0;
    if (s->meas_len[p] != s->meas_len[q] || s->tag_end[p] - tp != s->tag_end[q] - tq)
        return 0;
    if (memcmp(c->buf + s->meas_off[p], c->buf + s->meas_off[q], s->meas_len[p]) != 0)
        return 0;
    for (uint64_t i = 0; i < s->tag_end[p] - tp; i++)
        if (s->tag_key[tp + i] != s->tag_key[tq + i] || s->tag_val[tp + i] != s->tag_val[tq + i])
            return 0;
    return 1;
}

/* point p's tag set id (a new one in first-seen order when none) */
static uint64_t tagset_of(ts_sg *c, uint64_t p)
{
    uint64_t h = ts_mix64(c->s->series[p]);
    for (uint64_t slot = h & c->h_mask;; slot = (slot + 1) & c->h_mask) {
        uint64_t id = c->t_table[slot];
        if (id == 0) {
            id = c->n_tagsets++;
            c->t_table[slot] = id + 1;
            c->t_point[id] = p, c->t_hash[id] = h;
            c->t_series0[id] = c->n_series, c->t_nf[id] = c->s->field_end[p] - (p ? c->s->field_end[p - 1] : 0);
            return id;
        }
        if (c->t_hash[id - 1] == h && same_tagset(c, c->t_point[id - 1], p))
            return id - 1;
    }
}

static inline int same_key(const ts_sg *c, uint64_t f, uint64_t g)
{
    const ts_lp_scan *s = c->s;
    return s->field_klen[g] == s->field_klen[f]
           && memcmp(c->buf + s->field_off[g], c->buf + s->field_off[f], s->field_klen[f]) == 0;
}

/* field entry f, the j-th of point p (tag set ts), joins its series (a new one in first-seen
 * order when none). A point's fields usually come as in its tag set's first point, whose series
 * are consecutive: that series is tried before the hash table */
static uint64_t add_entry(ts_sg *c, uint64_t p, uint64_t ts, uint64_t j, uint64_t f)
{
    const ts_lp_scan *s = c->s;
    uint64_t guess = c->t_series0[ts] + j;
    if (j < c->t_nf[ts] && guess < c->n_series && c->s_tagset[guess] == ts && same_key(c, f, c->s_field[guess]))
        return guess;
    uint64_t h = ts_mix64(ts * 0x9e3779b97f4a7c15ULL ^ s->field_key[f]);
    for (uint64_t slot = h & c->h_mask;; slot = (slot + 1) & c->h_mask) {
        uint64_t id = c->table[slot];
        if (id == 0) {
            id = c->n_series++;
            c->table[slot] = id + 1;
            c->s_point[id] = p, c->s_field[id] = f, c->s_hash[id] = h, c->s_tagset[id] = ts;
            c->s_end[id] = c->s_bytes[id] = 0;
            return id;
        }
        if (c->s_hash[id - 1] == h && c->s_tagset[id - 1] == ts && same_key(c, f, c->s_field[id - 1]))
            return id - 1;
    }
}

static uint64_t table_size(uint64_t n_fields)
{
    uint64_t h = 16;
    while (h < 2 * n_fields)
        h <<= 1;
    return h;
}

uint64_t ts_sg_scratch(uint64_t n_fields)
{
    return 2 * table_size(n_fields) + 14 * n_fields;
}

void ts_sg_init(ts_sg *c, const ts_lp_scan *s, const char *buf, uint64_t *scratch)
{
    uint64_t n = s->fields, h = table_size(n), *a = scratch + 2 * h;
    *c = (ts_sg){s, buf, h - 1, scratch, scratch + h, a, a + n, a + 2 * n, a + 3 * n, a + 4 * n, a + 5 * n,
                 a + 6 * n, a + 7 * n, a + 8 * n, a + 9 * n, a + 10 * n, a + 11 * n, a + 12 * n, a + 13 * n, 0, 0};
    memset(scratch, 0, 2 * h * sizeof *scratch);
}

uint64_t ts_sg_group(ts_sg *c)
{
    const ts_lp_scan *s = c->s;
    uint64_t skipped = 0;
    for (uint64_t p = 0, f = 0; p < s->points; p++) {
        uint64_t ts = tagset_of(c, p), first = f;
        for (; f < s->field_end[p]; f++) {
            if (s->field_type[f] == TS_LP_STRING) {
                c->series_of[f] = TS_SG_NIL;
                skipped++;
                continue;
            }
            uint64_t id = add_entry(c, p, ts, f - first, f);
            c->series_of[f] = id;
            c->s_end[id]++;
        }
    }
    return skipped;
}

double ts_sg_value(const ts_lp_scan *s, uint64_t f)
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

static inline int64_t floor_div(int64_t ns, int64_t unit)
{
    return ns / unit - (ns % unit < 0);
}

void ts_sg_sort(ts_sg *c, int64_t unit_ns)
{
    const ts_lp_scan *s = c->s;
    uint64_t at = 0;
    for (uint64_t id = 0; id < c->n_series; id++) {
        c->s_start[id] = at;
        at += c->s_end[id];
        c->s_end[id] = c->s_start[id];             /* the cursor, the end once done */
        c->s_bytes[id] = 0;
    }
    for (uint64_t p = 0, f = 0; p < s->points; p++) {
        uint64_t t = (uint64_t)(unit_ns == 1 ? s->time[p] : floor_div(s->time[p], unit_ns));
        for (; f < s->field_end[p]; f++) {
            uint64_t id = c->series_of[f];
            if (id == TS_SG_NIL)
                continue;
            double d = ts_sg_value(s, f);
            uint64_t k = c->s_end[id]++;
            c->time[k] = t;
            memcpy(&c->bits[k], &d, 8);
        }
    }
}
