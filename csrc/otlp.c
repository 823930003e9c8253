/* OpenTelemetry OTLP/HTTP metrics bodies (phase 2: load): the points of a batch of line
 * protocol, as ts_lp_scan_lines read them, grouped by series (series_group.c) into one
 * ExportMetricsServiceRequest protobuf (tsbench.h, ts_otlp_encode). No globals, no allocation.
 *
 * The mapping: one ResourceMetrics with no Resource, holding one ScopeMetrics with no scope
 * (so a receiver adds no resource or scope labels), holding one gauge Metric per series
 * (measurement, tag set, field) in the order of their first value, named measurement_field
 * (unescaped, as written: the name VictoriaMetrics gives the same line), its data points in
 * file order, each with the tags as string attributes (unescaped, in the line's order), the
 * time in ns and the value as a double (integers converted, booleans 0/1); string values have
 * no point (counted). Fields are written in field-number order as a protobuf library writes
 * them (a time 0 left out; as_double, in a oneof, always written), so its bytes are the same.
 *   ExportMetricsServiceRequest { repeated ResourceMetrics resource_metrics = 1; }
 *   ResourceMetrics { Resource resource = 1; repeated ScopeMetrics scope_metrics = 2; }
 *   ScopeMetrics { InstrumentationScope scope = 1; repeated Metric metrics = 2; }
 *   Metric { string name = 1; oneof data { Gauge gauge = 5; ... } }
 *   Gauge { repeated NumberDataPoint data_points = 1; }
 *   NumberDataPoint { fixed64 time_unix_nano = 3; oneof value { double as_double = 4; }
 *                     repeated KeyValue attributes = 7; }
 *   KeyValue { string key = 1; AnyValue value = 2; }   AnyValue { oneof { string string_value = 1; } } */

#include <string.h>

#include "pb_wire.h"
#include "series_group.h"

/* a field of a length-delimited message: tag, length, and the bytes before its content */
static inline uint64_t field_len(uint64_t len)
{
    return 1 + varint_len(len) + len;
}

/* the text of [p, e) unescaped (a backslash before ',', '=' or ' ' dropped) into o (NULL: only
 * counted). Returns its length */
static uint32_t unescape(const char *p, const char *e, char *o)
{
    uint32_t n = 0;
    while (p < e) {
        char c = *p++;
        if (c == '\\' && p < e && (*p == ',' || *p == '=' || *p == ' '))
            c = *p++;
        if (o)
            o[n] = c;
        n++;
    }
    return n;
}

/* a tag set's attributes as they go on the wire, and where they were last written (NULL: not) */
typedef struct {
    uint64_t tagset;       /* TS_SG_NIL: none */
    uint64_t first_tag, n_tags;
    uint64_t len;
    const char *at;
} attrs;

static uint64_t attr_len(uint32_t kl, uint32_t vl)
{
    return field_len(kl) + field_len(field_len(vl));
}

/* a holds series id's tag set's attributes (measured) */
static void attrs_for(const ts_sg *c, uint64_t id, attrs *a)
{
    const ts_lp_scan *s = c->s;
    if (a->tagset == c->s_tagset[id])
        return;
    uint64_t p = c->s_point[id], t0 = p ? s->tag_end[p - 1] : 0;
    *a = (attrs){c->s_tagset[id], t0, s->tag_end[p] - t0, 0, NULL};
    for (uint64_t i = t0; i < s->tag_end[p]; i++) {
        const char *k = c->buf + s->tag_off[i], *v = k + s->tag_klen[i] + 1;
        a->len += field_len(attr_len(unescape(k, k + s->tag_klen[i], NULL), unescape(v, v + s->tag_vlen[i], NULL)));
    }
}

/* the attributes of a at o: copied when written before */
static char *put_attrs(const ts_sg *c, attrs *a, char *o)
{
    const ts_lp_scan *s = c->s;
    if (a->at) {
        memcpy(o, a->at, a->len);
        return o + a->len;
    }
    a->at = o;
    for (uint64_t i = a->first_tag; i < a->first_tag + a->n_tags; i++) {
        const char *k = c->buf + s->tag_off[i], *v = k + s->tag_klen[i] + 1;
        uint32_t kl = unescape(k, k + s->tag_klen[i], NULL), vl = unescape(v, v + s->tag_vlen[i], NULL);
        *o++ = 0x3a;                                  /* attributes = 7 */
        o = put_varint(o, attr_len(kl, vl));
        *o++ = 0x0a;                                  /* key = 1 */
        o = put_varint(o, kl);
        o += unescape(k, k + s->tag_klen[i], o);
        *o++ = 0x12;                                  /* value = 2 */
        o = put_varint(o, field_len(vl));
        *o++ = 0x0a;                                  /* string_value = 1 */
        o = put_varint(o, vl);
        o += unescape(v, v + s->tag_vlen[i], o);
    }
    return o;
}

static uint32_t name_len(const ts_sg *c, uint64_t id)
{
    const ts_lp_scan *s = c->s;
    uint64_t p = c->s_point[id], f = c->s_field[id];
    const char *m = c->buf + s->meas_off[p], *k = c->buf + s->field_off[f];
    return unescape(m, m + s->meas_len[p], NULL) + 1 + unescape(k, k + s->field_klen[f], NULL);
}

static char *put_name(const ts_sg *c, uint64_t id, char *o)
{
    const ts_lp_scan *s = c->s;
    uint64_t p = c->s_point[id], f = c->s_field[id];
    const char *m = c->buf + s->meas_off[p], *k = c->buf + s->field_off[f];
    o += unescape(m, m + s->meas_len[p], o);
    *o++ = '_';
    return o + unescape(k, k + s->field_klen[f], o);
}

static inline uint64_t point_len(uint64_t ns, uint64_t attrs_len)
{
    return (ns ? 9 : 0) + 9 + attrs_len;
}

/* series id's Metric message (inside): its Gauge's bytes into s_bytes */
static uint64_t metric_len(ts_sg *c, uint64_t id, const attrs *a)
{
    uint64_t gauge = 0;
    for (uint64_t k = c->s_start[id]; k < c->s_end[id]; k++)
        gauge += field_len(point_len(c->time[k], a->len));
    c->s_bytes[id] = gauge;
    return field_len(name_len(c, id)) + field_len(gauge);
}

/* series id's Metric (the field, tag and length included) at o */
static char *put_metric(const ts_sg *c, uint64_t id, attrs *a, uint64_t len, char *o)
{
    *o++ = 0x12;                                      /* ScopeMetrics.metrics = 2 */
    o = put_varint(o, len);
    *o++ = 0x0a;                                      /* name = 1 */
    o = put_varint(o, name_len(c, id));
    o = put_name(c, id, o);
    *o++ = 0x2a;                                      /* gauge = 5 */
    o = put_varint(o, c->s_bytes[id]);
    for (uint64_t k = c->s_start[id]; k < c->s_end[id]; k++) {
        uint64_t ns = c->time[k];
        *o++ = 0x0a;                                  /* data_points = 1 */
        o = put_varint(o, point_len(ns, a->len));
        if (ns) {
            *o++ = 0x19;                              /* time_unix_nano = 3, fixed64 */
            o = put_fixed64(o, ns);
        }
        *o++ = 0x21;                                  /* as_double = 4, fixed64 */
        o = put_fixed64(o, c->bits[k]);
        o = put_attrs(c, a, o);
    }
    return o;
}

uint64_t ts_otlp_scratch(uint64_t n_fields)
{
    return ts_sg_scratch(n_fields);
}

/* the ScopeMetrics' bytes: every series' Metric measured */
static uint64_t scope_len(ts_sg *c)
{
    static const attrs none = {.tagset = TS_SG_NIL};
    attrs a = none;
    uint64_t len = 0;
    for (uint64_t id = 0; id < c->n_series; id++) {
        attrs_for(c, id, &a);
        len += field_len(metric_len(c, id, &a));
    }
    return len;
}

int32_t ts_otlp_encode(const ts_lp_scan *s, const char *buf, char *out, uint64_t cap,
                       uint64_t *scratch, uint64_t scratch_cap, ts_rw_out *res)
{
    uint64_t n = s ? s->fields : 0;
    if (!s || !buf || !res || !scratch || scratch_cap < ts_otlp_scratch(n) || (cap && !out))
        return TS_ERR_ARG;
    ts_sg c;
    ts_sg_init(&c, s, buf, scratch);
    memset(res, 0, sizeof *res);
    res->skipped = ts_sg_group(&c);
    ts_sg_sort(&c, 1);
    res->series = c.n_series;
    res->samples = n - res->skipped;
    if (c.n_series == 0)
        return TS_OK;                                 /* an empty request: no bytes */
    uint64_t sm = scope_len(&c), rm = field_len(sm);
    res->used = field_len(rm);
    if (res->used > cap)
        return TS_ERR_SPACE;
    char *o = out;
    *o++ = 0x0a;                                      /* resource_metrics = 1 */
    o = put_varint(o, rm);
    *o++ = 0x12;                                      /* scope_metrics = 2 */
    o = put_varint(o, sm);
    static const attrs none = {.tagset = TS_SG_NIL};
    attrs a = none;
    for (uint64_t id = 0; id < c.n_series; id++) {
        attrs_for(&c, id, &a);
        o = put_metric(&c, id, &a, field_len(name_len(&c, id)) + field_len(c.s_bytes[id]), o);
    }
    return TS_OK;
}
