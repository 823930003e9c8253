/* series_group.h -- the points of a line protocol batch grouped by series (phase 2: load),
 * shared by the protobuf encoders of the protocols that carry series (remote_write.c,
 * otlp.c). A series is a (measurement, tag set, field); a tag set's tags compare in the order
 * the line writes them. No globals, no allocation: every array is caller scratch. */
#ifndef TS_SERIES_GROUP_H
#define TS_SERIES_GROUP_H

#include "tsbench.h"

#define TS_SG_NIL UINT64_MAX

typedef struct {
    const ts_lp_scan *s;
    const char *buf;
    uint64_t h_mask;
    uint64_t *table;       /* series id + 1, 0: empty */
    uint64_t *t_table;     /* tag set id + 1, 0: empty */
    uint64_t *s_point, *s_field, *s_hash, *s_tagset;   /* per series: its first value, key hash, tag set */
    uint64_t *s_start, *s_end;   /* per series: its samples in time and bits */
    uint64_t *s_bytes;     /* per series: the encoder's own figure (its bytes on the wire) */
    uint64_t *t_point, *t_hash;    /* per tag set (measurement and tags): its first point */
    uint64_t *t_series0, *t_nf;    /* per tag set: the series of its first point's first field, its fields */
    uint64_t *series_of;   /* per field entry: its series, TS_SG_NIL: none (a string) */
    uint64_t *time, *bits; /* the samples, series after series: times (in the unit ts_sg_sort was
                              given), values as the bits of doubles */
    uint64_t n_series, n_tagsets;
} ts_sg;

/* the uint64_t scratch entries the grouping of a scan of n_fields field values needs */
uint64_t ts_sg_scratch(uint64_t n_fields);

/* c laid out over scratch (at least ts_sg_scratch(s->fields) entries) for the scan s of buf */
void ts_sg_init(ts_sg *c, const ts_lp_scan *s, const char *buf, uint64_t *scratch);

/* every field entry joins its series, in the order of their first value (string values join
 * none); s_end counts each series' samples. Returns the string values left out */
uint64_t ts_sg_group(ts_sg *c);

/* the samples into time and bits, series after series, in file order within a series (a
 * counting sort: reads and writes in order); times floor(ns / unit_ns); s_start and s_end
 * bound each series' samples; s_bytes zeroed */
void ts_sg_sort(ts_sg *c, int64_t unit_ns);

/* field entry f's value as a double (integers converted, booleans 0/1) */
double ts_sg_value(const ts_lp_scan *s, uint64_t f);

#endif
