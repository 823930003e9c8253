/*
 * internal.h -- the simulator's private state and the serializer interface.
 *
 * A serializer (one per output format) is a table of three functions: the
 * tag part of a record for (entity, series), the text of a timestamp, and a
 * whole record given those two. Adding a format means one ts_format_ops and
 * one line in ts_formats[] (formats.c) plus an enum value in tsbench.h.
 */
#ifndef TS_INTERNAL_H
#define TS_INTERNAL_H

#include <string.h>

#include "tsbench.h"
#include "rng.h"

/* slots of the random streams of one (entity, series) */
#define TS_SLOT_TAG 1000000    /* + global tag index; series -1 */
#define TS_SLOT_FAULT -1
#define TS_SLOT_FAULT_GROUP -2
#define TS_SLOT_CHURN -3      /* entity -1, series -1: the churn's starting offset */
/* draw indices within a tick */
#define TS_J_LAZY 1
#define TS_J_INIT 2

/* step kinds of the compiled advance: a normal step with no lazy draw and no
 * scale, one loop each; every other advancing field goes through OTHER */
enum { TS_STEP_CWALK_N = 0, TS_STEP_MWALK_N = 1, TS_STEP_WALK_N = 2, TS_STEP_OTHER = 3, TS_STEP_KINDS = 4 };

#define TS_STAMP_MAX 48
#define TS_PIECE_PAD 32    /* field pieces, tag parts and stamps are copied 32 bytes at a time:
                              their buffers have this much readable room after them */

/* one written field of a series, in order: what a record with no null field
 * writes for it. Influx writes text[off, off + len) first (the previous
 * value's 'i' when that was an integer, the separator, the escaped name and
 * '='), CSV a comma. */
typedef struct ts_item {
    int32_t f;             /* field index within the series */
    int32_t is_int;        /* TS_TYPE_INT */
    uint32_t off, len;     /* into ts_sim.item_text */
} ts_item;

/* one record as the serializers see it */
typedef struct ts_rec {
    int64_t entity;
    int32_t series;
    int64_t time_ns;
    const double *vals;   /* one written value per field of the series */
    int32_t null_field;   /* field index within the series, or -1 */
    int32_t null_tag;     /* tag index within the series' tag list, or -1 */
} ts_rec;

typedef struct ts_format_ops {
    const char *name;
    /* the tag part of a record (skip_tag: index of a null tag or -1) */
    size_t (*prefix)(const ts_sim *sim, int64_t entity, int32_t series, int32_t skip_tag, char *out);
    size_t (*stamp)(int64_t time_ns, char *out);
    size_t (*record)(const ts_sim *sim, const ts_rec *r, const char *pfx, size_t pfx_len,
                     const char *stamp, size_t stamp_len, char *out);
    /* a field's name as written before its value (NULL: none); cached in sim->piece */
    size_t (*piece)(const ts_sim *sim, int32_t field, char *out);
    /* extra bytes per field name and per tag beyond the raw text (escaping, separators) */
    int32_t name_factor, tag_overhead;
} ts_format_ops;

extern const ts_format_ops *const ts_formats[TS_FMT_COUNT];

/* the tag parts of one format's records, each built once, in the caller's memory:
 * appended to blob in the order the cursor first needs them (epoch 0: entity order); under
 * churn each in a slot of its bound of its own, rebuilt in place when its series is renewed */
#define TS_PFX_LEN_BITS 24
typedef struct ts_prefix_cache {
    int32_t fmt;           /* the format cached, or -1: none */
    uint64_t *index;       /* per (local entity, series): offset << TS_PFX_LEN_BITS | length; UINT64_MAX = not built */
    char *blob;
    size_t used, cap;      /* cap leaves TS_PIECE_PAD readable bytes after it */
} ts_prefix_cache;

/* the parts of the per-entity memory the caller hands in (ts_sim_set_memory), each
 * indexed by local entity: stream keys, state, late-entry counts, entries and values,
 * and the cache of tag parts (its index; its text, at most pfx_bound per series) */
enum { TS_MEM_BASE = 0, TS_MEM_STATE = 1, TS_MEM_PEND_N = 2, TS_MEM_PEND = 3, TS_MEM_PEND_VALS = 4,
       TS_MEM_PFX_INDEX = 5, TS_MEM_PFX_BLOB = 6, TS_MEM_PARTS = 7 };

typedef struct ts_pending {
    int64_t epoch, due;
    int32_t null_field, null_tag;
} ts_pending;

/* a field as the advance reads it, at its step position: a compact copy (the
 * distribution's a, b and the clamp's lo, hi at scale 1) */
typedef struct ts_walk {
    uint64_t key;          /* its stream key less the series' base */
    double a, b, lo, hi;
    int32_t f, reset;      /* its index within the series; CWALK's refill at lo */
} ts_walk;

struct ts_sim {
    /* the schema (deep copy) */
    char *strtab;
    int32_t *stroff;
    int32_t n_strings;
    ts_part *parts;
    ts_tag *tags;
    int32_t n_tags, n_entity_tags;
    ts_series *series;
    int32_t n_series;
    ts_field *fields;
    int32_t n_fields;
    double *table;
    int32_t *itable;
    ts_faults faults;
    int has_faults;

    /* the run */
    uint64_t seed;
    int64_t entity_lo, n_entities;
    int64_t start_ns, interval_ns, epochs, total_epochs;
    int32_t max_series_fields;
    ts_zig zig;
    /* series churn (ts_sim_set_churn; churn_m 0: none) */
    int64_t churn_n, churn_m, churn_ns, churn_off;
    int64_t render_gen;    /* the generation the tag text being built is of (0: the entity's own) */

    /* the caller's per-entity memory (ts_sim_set_memory): the arrays below point into it */
    void *mem;
    int64_t inited;        /* local entities whose state is initialized (in cursor order, epoch 0) */
    /* per (local entity, field) state */
    double *state;
    /* per (local entity, series): ts_stream_key(seed, entity, series, 0) */
    uint64_t *base;
    /* the compiled advance: per series, its advancing fields (indices within
     * the series) grouped by step kind, at first_field in step_idx; kind k of
     * series s is step_idx[first_field + step_end[s][k-1] .. + step_end[s][k]) */
    int32_t *step_idx;
    int32_t (*step_end)[TS_STEP_KINDS];
    /* per step position below step_end[s][TS_STEP_WALK_N] (the walks with a
     * normal step), the same: what the advance reads of its field */
    ts_walk *walks;
    /* per series: 1 when every field is written as its state (no derived,
     * truncated or hidden field): series_values takes one fused loop, and a
     * record going out as text is written from the state itself when every
     * value is in range (entry_values) */
    int32_t *plain;
    /* late entries: per (local entity, series) a ring of pend_cap */
    int32_t pend_cap;
    ts_pending *pend;
    int32_t *pend_n;
    double *pend_vals;     /* [entity][series][pend_cap][max_series_fields] */

    /* the cursor */
    int64_t t, el;
    int32_t s, stage;

    /* serializer support */
    uint64_t *bound[TS_FMT_COUNT];    /* record bound per series */
    uint64_t *pfx_bound[TS_FMT_COUNT];  /* tag part bound per series */
    ts_prefix_cache cache;
    int64_t stamp_epoch[TS_FMT_COUNT];
    char stamp[TS_FMT_COUNT][TS_STAMP_MAX];
    size_t stamp_len[TS_FMT_COUNT];
    char *piece[TS_FMT_COUNT];
    uint32_t *piece_off[TS_FMT_COUNT];  /* n_fields + 1 */
    int32_t *visible;                 /* per series: fields that are not hidden */
    ts_item *items;                   /* per series from item_first[s]: its visible fields */
    int32_t *item_first;              /* n_series + 1 */
    char *item_text;                  /* influx field pieces with separators, CSV heads, + TS_PIECE_PAD */
    uint32_t *csv_head;               /* per series: offset, length in item_text of "measurement," */
    double *scratch;                  /* max_series_fields */
    char *pfx_scratch;                /* one uncached tag part */
    /* value statistics (ts_sim_set_stats), the caller's; stats NULL: none kept */
    ts_field_stats *stats;
    uint8_t *seen;                    /* per (local entity, series): 1 once it has a record */
    int64_t *series_seen;             /* per series: streams with a record */
    int32_t *stat_fields;             /* per series from stat_first[s]: its visible float fields, then int ones */
    int32_t *stat_first;              /* n_series + 1 */
    int32_t *stat_floats;             /* per series: how many of them are float fields */
};

/* helpers shared with the serializers */
static inline const char *ts_str(const ts_sim *sim, int32_t i) { return sim->strtab + sim->stroff[i]; }
static inline size_t ts_strlen(const ts_sim *sim, int32_t i)
{
    return (size_t)(sim->stroff[i + 1] - sim->stroff[i] - 1);
}
static inline const ts_tag *ts_series_tag(const ts_sim *sim, int32_t s, int32_t pos)
{
    if (pos < sim->n_entity_tags) return &sim->tags[pos];
    return &sim->tags[sim->series[s].first_tag + (pos - sim->n_entity_tags)];
}
static inline int32_t ts_series_ntags(const ts_sim *sim, int32_t s)
{
    return sim->n_entity_tags + sim->series[s].n_tags;
}
/* the unescaped value of tag pos of (entity, series); returns its length */
size_t ts_tag_value(const ts_sim *sim, int64_t entity, int32_t s, int32_t pos, char *out);
/* an upper bound on the length of that value */
size_t ts_tag_value_bound(const ts_sim *sim, int32_t s, int32_t pos);

__attribute__((visibility("hidden"))) size_t ts_format_double(double v, char *out);
/* copy n bytes from src (readable up to a multiple of TS_PIECE_PAD past
 * n) to out (writable as far), in fixed-size pieces: no call */
static inline size_t ts_put_padded(char *out, const char *src, size_t n)
{
    for (size_t i = 0; i < n; i += TS_PIECE_PAD) memcpy(out + i, src + i, TS_PIECE_PAD);
    return n;
}

/* build sim->items, item_first and item_text (formats.c) */
int ts_build_items(ts_sim *sim);

#endif
