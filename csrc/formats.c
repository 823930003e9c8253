/*
 * formats.c -- the serializers of phase 1: InfluxDB line protocol and CSV
 * (PostgreSQL COPY, DuckDB). One ts_format_ops each; ts_formats[] lists them
 * in the order of the TS_FMT_* values.
 */
#include <stdlib.h>
#include <string.h>

#include "fmt_int.h"
#include "internal.h"

static inline size_t put(char *out, const char *s, size_t n)
{
    memcpy(out, s, n);
    return n;
}

static inline size_t put_value(const ts_field *fd, double v, char *out)
{
    if (fd->type == TS_TYPE_INT) return ts_fmt_i64_rec((int64_t)v, out);
    return ts_format_double(v, out);
}

/* ---- InfluxDB line protocol ------------------------------------------------
 * measurement,tag=v,... field=v,field=vi <ns>\n
 * Tags in declared order; integers with the i suffix; floats shortest
 * round-trip without exponent. Commas, spaces and '=' are escaped. */

static size_t influx_escape(const char *s, size_t n, int measurement, char *out)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == ',' || c == ' ' || (!measurement && c == '=') || c == '\\') out[k++] = '\\';
        out[k++] = c;
    }
    return k;
}

static size_t influx_prefix(const ts_sim *sim, int64_t entity, int32_t s, int32_t skip, char *out)
{
    const ts_series *se = &sim->series[s];
    size_t n = influx_escape(ts_str(sim, se->name), ts_strlen(sim, se->name), 1, out);
    char val[4096];
    for (int32_t k = 0; k < ts_series_ntags(sim, s); k++) {
        if (k == skip) continue;
        size_t m = ts_tag_value_bound(sim, s, k) <= sizeof val ? ts_tag_value(sim, entity, s, k, val) : 0;
        if (m == 0) continue;   /* the protocol has no empty tag values */
        const ts_tag *tag = ts_series_tag(sim, s, k);
        out[n++] = ',';
        n += influx_escape(ts_str(sim, tag->key), ts_strlen(sim, tag->key), 0, out + n);
        out[n++] = '=';
        n += influx_escape(val, m, 0, out + n);
    }
    return n;
}

static size_t influx_stamp(int64_t time_ns, char *out) { return ts_fmt_i64(time_ns, out); }

static size_t influx_piece(const ts_sim *sim, int32_t f, char *out)
{
    const ts_field *fd = &sim->fields[f];
    size_t n = influx_escape(ts_str(sim, fd->name), ts_strlen(sim, fd->name), 0, out);
    out[n++] = '=';
    return n;
}

static size_t influx_record(const ts_sim *sim, const ts_rec *r, const char *pfx, size_t plen,
                            const char *stamp, size_t slen, char *out)
{
    const ts_series *se = &sim->series[r->series];
    const ts_field *fds = sim->fields + se->first_field;
    const char *piece = sim->piece[TS_FMT_INFLUX];
    const uint32_t *poff = sim->piece_off[TS_FMT_INFLUX] + se->first_field;
    size_t n = put(out, pfx, plen);
    char sep = ' ';
    for (int32_t f = 0; f < se->n_fields; f++) {
        if (fds[f].hidden || f == r->null_field) continue;
        out[n++] = sep;
        sep = ',';
        size_t plen_f = poff[f + 1] - poff[f];
        if (plen_f <= TS_PIECE_PAD)
            memcpy(out + n, piece + poff[f], TS_PIECE_PAD);   /* fixed size: no call; the record bound covers it */
        else
            memcpy(out + n, piece + poff[f], plen_f);
        n += plen_f;
        n += put_value(&fds[f], r->vals[f], out + n);
        if (fds[f].type == TS_TYPE_INT) out[n++] = 'i';
    }
    out[n++] = ' ';
    n += put(out + n, stamp, slen);
    out[n++] = '\n';
    return n;
}

/* the field part of a record with no null field, from the series' items;
 * what the loop needs is read into locals first, as the stores to out could
 * alias anything (no reloads after each copy) */
static inline size_t influx_items(const ts_sim *sim, int32_t s, const double *vals, char *out)
{
    const ts_item *it = sim->items + sim->item_first[s], *end = sim->items + sim->item_first[s + 1];
    const char *text = sim->item_text;
    char *o = out;
    for (; it < end; it++) {
        uint32_t len = it->len, off = it->off;
        int32_t f = it->f, is_int = it->is_int;
        double v = vals[f];
        if (len <= 16)
            memcpy(o, text + off, 16);             /* fixed size: the bound covers it */
        else if (len <= TS_PIECE_PAD)
            memcpy(o, text + off, TS_PIECE_PAD);
        else
            memcpy(o, text + off, len);
        o += len;
        if (is_int)
            o += ts_fmt_i64_rec((int64_t)v, o);   /* its 'i' starts the next item's text */
        else
            o += ts_format_double(v, o);
    }
    if (end > sim->items + sim->item_first[s] && end[-1].is_int) *o++ = 'i';
    return (size_t)(o - out);
}

static size_t influx_record_fast(const ts_sim *sim, const ts_rec *r, const char *pfx, size_t plen,
                                 const char *stamp, size_t slen, char *out)
{
    if (r->null_field >= 0) return influx_record(sim, r, pfx, plen, stamp, slen, out);
    size_t n = ts_put_padded(out, pfx, plen);
    n += influx_items(sim, r->series, r->vals, out + n);
    out[n++] = ' ';
    n += ts_put_padded(out + n, stamp, slen);
    out[n++] = '\n';
    return n;
}

static const ts_format_ops influx_ops = {
    "influx", influx_prefix, influx_stamp, influx_record_fast, influx_piece, 2, 2,
};

/* ---- CSV -------------------------------------------------------------------
 * measurement,time,tag values...,field values...\n
 * time is RFC 3339 UTC; a null tag or field is an empty unquoted value (NULL
 * for COPY ... CSV); values holding a comma, quote or line break, and empty
 * strings, are quoted. */

static size_t csv_quote(const char *s, size_t n, char *out)
{
    int need = n == 0;
    for (size_t i = 0; i < n && !need; i++)
        need = s[i] == ',' || s[i] == '"' || s[i] == '\n' || s[i] == '\r';
    if (!need) return put(out, s, n);
    size_t k = 0;
    out[k++] = '"';
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '"') out[k++] = '"';
        out[k++] = s[i];
    }
    out[k++] = '"';
    return k;
}

static size_t csv_prefix(const ts_sim *sim, int64_t entity, int32_t s, int32_t skip, char *out)
{
    size_t n = 0;
    char val[4096];
    for (int32_t k = 0; k < ts_series_ntags(sim, s); k++) {
        out[n++] = ',';
        if (k == skip) continue;
        size_t m = ts_tag_value_bound(sim, s, k) <= sizeof val ? ts_tag_value(sim, entity, s, k, val) : 0;
        n += csv_quote(val, m, out + n);
    }
    return n;
}

/* days since 1970-01-01 to a civil date (proleptic Gregorian) */
static void civil(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    unsigned doe = (unsigned)(z - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = (int64_t)yoe + era * 400 + (*m <= 2);
}

static size_t csv_stamp(int64_t time_ns, char *out)
{
    int64_t secs = time_ns / 1000000000, ns = time_ns % 1000000000;
    if (ns < 0) { ns += 1000000000; secs -= 1; }
    int64_t days = secs / 86400, sod = secs % 86400;
    if (sod < 0) { sod += 86400; days -= 1; }
    int64_t y;
    unsigned m, d;
    civil(days, &y, &m, &d);
    size_t n = ts_fmt_u64_pad((uint64_t)(y < 0 ? 0 : y), 4, out);
    out[n++] = '-';
    n += ts_fmt_u64_pad(m, 2, out + n);
    out[n++] = '-';
    n += ts_fmt_u64_pad(d, 2, out + n);
    out[n++] = 'T';
    n += ts_fmt_u64_pad((uint64_t)(sod / 3600), 2, out + n);
    out[n++] = ':';
    n += ts_fmt_u64_pad((uint64_t)(sod / 60 % 60), 2, out + n);
    out[n++] = ':';
    n += ts_fmt_u64_pad((uint64_t)(sod % 60), 2, out + n);
    if (ns) {
        int w = 9;
        while (ns % 10 == 0) { ns /= 10; w--; }
        out[n++] = '.';
        n += ts_fmt_u64_pad((uint64_t)ns, w, out + n);
    }
    out[n++] = 'Z';
    return n;
}

/* the field columns of a record with no null field, from the series' items */
static inline size_t csv_items(const ts_sim *sim, int32_t s, const double *vals, char *out)
{
    const ts_item *it = sim->items + sim->item_first[s], *end = sim->items + sim->item_first[s + 1];
    char *o = out;
    for (; it < end; it++) {
        int32_t is_int = it->is_int;
        double v = vals[it->f];
        *o++ = ',';
        if (is_int)
            o += ts_fmt_i64_rec((int64_t)v, o);
        else
            o += ts_format_double(v, o);
    }
    return (size_t)(o - out);
}

static size_t csv_record(const ts_sim *sim, const ts_rec *r, const char *pfx, size_t plen,
                         const char *stamp, size_t slen, char *out)
{
    const ts_series *se = &sim->series[r->series];
    const ts_field *fds = sim->fields + se->first_field;
    size_t n = ts_put_padded(out, sim->item_text + sim->csv_head[2 * r->series], sim->csv_head[2 * r->series + 1]);
    n += ts_put_padded(out + n, stamp, slen);
    n += ts_put_padded(out + n, pfx, plen);
    if (r->null_field < 0) {
        n += csv_items(sim, r->series, r->vals, out + n);
    } else {
        for (int32_t f = 0; f < se->n_fields; f++) {
            if (fds[f].hidden) continue;
            out[n++] = ',';
            if (f != r->null_field) n += put_value(&fds[f], r->vals[f], out + n);
        }
    }
    out[n++] = '\n';
    return n;
}

/* the items of every series, and the CSV head (the quoted measurement and a comma) */
int ts_build_items(ts_sim *sim)
{
    size_t cap = TS_PIECE_PAD + 1;
    for (int32_t f = 0; f < sim->n_fields; f++) cap += 2 * ts_strlen(sim, sim->fields[f].name) + 3;
    for (int32_t s = 0; s < sim->n_series; s++) cap += 2 * ts_strlen(sim, sim->series[s].name) + 3;
    sim->items = malloc(sizeof(ts_item) * (size_t)sim->n_fields + 1);
    sim->item_first = malloc(sizeof(int32_t) * ((size_t)sim->n_series + 1));
    sim->csv_head = malloc(sizeof(uint32_t) * 2 * (size_t)sim->n_series);
    sim->item_text = malloc(cap);
    if (!sim->items || !sim->item_first || !sim->csv_head || !sim->item_text) return TS_ERR_NOMEM;
    int32_t k = 0;
    size_t used = 0;
    for (int32_t s = 0; s < sim->n_series; s++) {
        const ts_series *se = &sim->series[s];
        sim->csv_head[2 * s] = (uint32_t)used;
        used += csv_quote(ts_str(sim, se->name), ts_strlen(sim, se->name), sim->item_text + used);
        sim->item_text[used++] = ',';
        sim->csv_head[2 * s + 1] = (uint32_t)used - sim->csv_head[2 * s];
        sim->item_first[s] = k;
        for (int32_t f = 0; f < se->n_fields; f++) {
            const ts_field *fd = &sim->fields[se->first_field + f];
            if (fd->hidden) continue;
            ts_item *it = &sim->items[k];
            it->f = f;
            it->is_int = fd->type == TS_TYPE_INT;
            it->off = (uint32_t)used;
            if (k > sim->item_first[s] && sim->items[k - 1].is_int)
                sim->item_text[used++] = 'i';   /* the previous value's integer suffix */
            sim->item_text[used++] = k == sim->item_first[s] ? ' ' : ',';
            used += influx_piece(sim, se->first_field + f, sim->item_text + used);
            it->len = (uint32_t)(used - it->off);
            k++;
        }
    }
    sim->item_first[sim->n_series] = k;
    memset(sim->item_text + used, 0, TS_PIECE_PAD);
    return TS_OK;
}

static const ts_format_ops csv_ops = {
    "csv", csv_prefix, csv_stamp, csv_record, NULL, 2, 4,
};

const ts_format_ops *const ts_formats[TS_FMT_COUNT] = {&influx_ops, &csv_ops};
