/*
 * sim.c -- the simulator: schema copy, per-entity state, evolutions, imperfect
 * delivery and the fill loop shared by every output, and the merge of several
 * simulators' fills into the bytes of one (phase 1, generate).
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmt_double.h"
#include "fmt_int.h"
#include "internal.h"

#ifndef TS_BUILD_ID
#define TS_BUILD_ID "unknown"
#endif

int32_t ts_api_version(void) { return TS_API_VERSION; }
const char *ts_build_id(void) { return TS_BUILD_ID; }

static int fail(char *err, size_t cap, const char *fmt, ...)
{
    if (err && cap) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, cap, fmt, ap);
        va_end(ap);
    }
    return TS_ERR_ARG;
}

static void *dup_array(const void *src, size_t n, size_t size)
{
    size_t bytes = n * size;
    void *p = malloc(bytes ? bytes : 1);
    if (p && bytes) memcpy(p, src, bytes);
    return p;
}

/* ---- tags ------------------------------------------------------------- */

static uint64_t tag_key(const ts_sim *sim, int64_t entity, int32_t s, int32_t pos)
{
    int32_t g = pos < sim->n_entity_tags ? pos : sim->series[s].first_tag + (pos - sim->n_entity_tags);
    return ts_stream_key(sim->seed, entity, -1, TS_SLOT_TAG + g);
}

/* the index drawn by the first choice part of tag pos, or -1 */
static int64_t tag_choice(const ts_sim *sim, int64_t entity, int32_t s, int32_t pos)
{
    const ts_tag *tag = ts_series_tag(sim, s, pos);
    uint64_t key = tag_key(sim, entity, s, pos);
    for (int32_t k = 0; k < tag->n_parts; k++) {
        const ts_part *p = &sim->parts[tag->first_part + k];
        uint64_t r = ts_draw(key, 0, (uint64_t)k);
        if (p->kind == TS_PART_CHOICE)
            return (int64_t)(r % (uint64_t)p->b);
        if (p->kind == TS_PART_CHOICE_BY) {
            int64_t c = tag_choice(sim, entity, s, p->a);
            int32_t n = sim->itable[p->b + 2 * c + 1];
            return (int64_t)(r % (uint64_t)n);
        }
    }
    return -1;
}

size_t ts_tag_value(const ts_sim *sim, int64_t entity, int32_t s, int32_t pos, char *out)
{
    const ts_tag *tag = ts_series_tag(sim, s, pos);
    uint64_t key = tag_key(sim, entity, s, pos);
    size_t n = 0;
    for (int32_t k = 0; k < tag->n_parts; k++) {
        const ts_part *p = &sim->parts[tag->first_part + k];
        uint64_t r = ts_draw(key, 0, (uint64_t)k);
        switch (p->kind) {
        case TS_PART_LIT:
            memcpy(out + n, ts_str(sim, p->a), ts_strlen(sim, p->a));
            n += ts_strlen(sim, p->a);
            break;
        case TS_PART_ENTITY: {
            uint64_t v = (uint64_t)entity / (uint64_t)p->x;
            if (p->y > 0) v %= (uint64_t)p->y;
            n += ts_fmt_u64_pad(v, p->width, out + n);
            break;
        }
        case TS_PART_INT:
            n += ts_fmt_u64_pad((uint64_t)p->x + r % (uint64_t)p->y, p->width, out + n);
            break;
        case TS_PART_CHOICE: {
            int32_t i = p->a + (int32_t)(r % (uint64_t)p->b);
            memcpy(out + n, ts_str(sim, i), ts_strlen(sim, i));
            n += ts_strlen(sim, i);
            break;
        }
        case TS_PART_CHOICE_BY: {
            int64_t c = tag_choice(sim, entity, s, p->a);
            int32_t first = sim->itable[p->b + 2 * c], cnt = sim->itable[p->b + 2 * c + 1];
            int32_t i = first + (int32_t)(r % (uint64_t)cnt);
            memcpy(out + n, ts_str(sim, i), ts_strlen(sim, i));
            n += ts_strlen(sim, i);
            break;
        }
        }
    }
    if (pos == 0 && sim->render_gen > 0) {     /* a churned entity's new series */
        memcpy(out + n, "_g", 2);
        n += 2 + ts_fmt_u64_pad((uint64_t)sim->render_gen, 0, out + n + 2);
    }
    return n;
}

#define TS_CHURN_SUFFIX_MAX 22    /* "_g" and a generation's digits */

size_t ts_tag_value_bound(const ts_sim *sim, int32_t s, int32_t pos)
{
    const ts_tag *tag = ts_series_tag(sim, s, pos);
    size_t n = 0;
    for (int32_t k = 0; k < tag->n_parts; k++) {
        const ts_part *p = &sim->parts[tag->first_part + k];
        size_t m = 0;
        switch (p->kind) {
        case TS_PART_LIT: m = ts_strlen(sim, p->a); break;
        case TS_PART_ENTITY:
        case TS_PART_INT: m = 20 + (size_t)(p->width > 0 ? p->width : 0); break;
        case TS_PART_CHOICE:
            for (int32_t i = 0; i < p->b; i++)
                if (ts_strlen(sim, p->a + i) > m) m = ts_strlen(sim, p->a + i);
            break;
        case TS_PART_CHOICE_BY:
            /* any string of any sublist */
            for (int32_t i = 0; i < sim->n_strings; i++)
                if (ts_strlen(sim, i) > m) m = ts_strlen(sim, i);
            break;
        }
        n += m;
    }
    return n + (pos == 0 && sim->churn_m > 0 ? TS_CHURN_SUFFIX_MAX : 0);
}

/* ---- validation ---------------------------------------------------------- */

static int check_schema(const ts_schema *sc, char *err, size_t cap)
{
    if (sc->n_strings < 1 || !sc->strtab || !sc->stroff)
        return fail(err, cap, "schema has no strings");
    for (int32_t i = 0; i < sc->n_parts; i++) {
        const ts_part *p = &sc->parts[i];
        switch (p->kind) {
        case TS_PART_LIT:
            if (p->a < 0 || p->a >= sc->n_strings) return fail(err, cap, "part %d: bad string", i);
            break;
        case TS_PART_ENTITY:
            if (p->x < 1 || p->y < 0) return fail(err, cap, "part %d: bad entity divisor/modulo", i);
            break;
        case TS_PART_INT:
            if (p->y < 1 || p->x < 0) return fail(err, cap, "part %d: bad int range", i);
            break;
        case TS_PART_CHOICE:
            if (p->b < 1 || p->a < 0 || p->a + p->b > sc->n_strings)
                return fail(err, cap, "part %d: bad choice", i);
            break;
        case TS_PART_CHOICE_BY:
            if (p->b < 0 || p->b >= sc->n_itable) return fail(err, cap, "part %d: bad choice table", i);
            break;
        default:
            return fail(err, cap, "part %d: unknown kind %d", i, p->kind);
        }
    }
    for (int32_t i = 0; i < sc->n_tags; i++) {
        const ts_tag *t = &sc->tags[i];
        if (t->first_part < 0 || t->n_parts < 0 || t->first_part + t->n_parts > sc->n_parts)
            return fail(err, cap, "tag %d: bad parts", i);
    }
    if (sc->n_entity_tags < 0 || sc->n_entity_tags > sc->n_tags)
        return fail(err, cap, "bad entity tag count");
    if (sc->n_series < 1) return fail(err, cap, "schema has no series");
    for (int32_t s = 0; s < sc->n_series; s++) {
        const ts_series *se = &sc->series[s];
        if (se->n_fields < 1 || se->first_field < 0 || se->first_field + se->n_fields > sc->n_fields)
            return fail(err, cap, "series %d: bad fields", s);
        if (se->first_tag < 0 || se->n_tags < 0 || se->first_tag + se->n_tags > sc->n_tags)
            return fail(err, cap, "series %d: bad tags", s);
        int32_t ntags = sc->n_entity_tags + se->n_tags;
        for (int32_t f = 0; f < se->n_fields; f++) {
            const ts_field *fd = &sc->fields[se->first_field + f];
            if (fd->evo < TS_EVO_FRESH || fd->evo > TS_EVO_RATIO)
                return fail(err, cap, "series %d field %d: unknown evolution", s, f);
            if (fd->evo == TS_EVO_LIN || fd->evo == TS_EVO_RATIO) {
                if (fd->src1 < 0 || fd->src1 >= se->n_fields || fd->src1 == f ||
                    fd->src2 >= se->n_fields || fd->src2 == f)
                    return fail(err, cap, "series %d field %d: bad operands", s, f);
                if (fd->evo == TS_EVO_RATIO && fd->src2 < 0)
                    return fail(err, cap, "series %d field %d: ratio needs two operands", s, f);
                continue;
            }
            if (fd->dist < TS_DIST_NORMAL || fd->dist > TS_DIST_CONST)
                return fail(err, cap, "series %d field %d: unknown distribution", s, f);
            if ((fd->init == TS_INIT_CHOICE || fd->init == TS_INIT_BY_TAG) &&
                (fd->table_off < 0 || fd->table_len < 1 || fd->table_off + fd->table_len > sc->n_table))
                return fail(err, cap, "series %d field %d: bad value table", s, f);
            if (fd->init == TS_INIT_BY_TAG && (fd->tag < 0 || fd->tag >= ntags))
                return fail(err, cap, "series %d field %d: bad tag", s, f);
            if (fd->scale_by >= f || (fd->scale_by >= 0 && sc->fields[se->first_field + fd->scale_by].evo != TS_EVO_CONST))
                return fail(err, cap, "series %d field %d: scale_by must name an earlier constant field", s, f);
            if (fd->evo == TS_EVO_CWALK && !(fd->lo <= fd->hi))
                return fail(err, cap, "series %d field %d: clamp lo > hi", s, f);
        }
    }
    if (sc->faults.group_size < 0 || sc->faults.max_delay < 0)
        return fail(err, cap, "bad fault parameters");
    return TS_OK;
}

/* ---- evolutions ------------------------------------------------------------ */

static inline double field_scale(const ts_field *fd, const double *st)
{
    return fd->scale_by >= 0 ? st[fd->scale_by] : 1.0;
}

static inline double step_draw(const ts_sim *sim, const ts_field *fd, uint64_t key, uint64_t tick, double sc)
{
    switch (fd->dist) {
    case TS_DIST_NORMAL: return sc * (fd->a + fd->b * ts_normal(&sim->zig, key, tick));
    case TS_DIST_UNIFORM: return sc * (fd->a + (fd->b - fd->a) * ts_u01(ts_draw(key, tick, 0)));
    default: return sc * fd->a;
    }
}

/* the stream of field f of a series: base is already a full hash of (seed,
 * entity, series), and ts_draw mixes again, so an odd stride suffices */
static inline uint64_t field_key(uint64_t base, int32_t f)
{
    return base + (uint64_t)(f + 1) * UINT64_C(0x2545f4914f6cdd1d);
}

static void init_entity(ts_sim *sim, int64_t el)
{
    int64_t entity = sim->entity_lo + el;
    double *st = sim->state + el * sim->n_fields;
    for (int32_t s = 0; s < sim->n_series; s++) {
        const ts_series *se = &sim->series[s];
        uint64_t base = ts_stream_key(sim->seed, entity, s, 0);
        sim->base[(size_t)el * (size_t)sim->n_series + (size_t)s] = base;
        if (sim->pend_cap) sim->pend_n[(size_t)el * (size_t)sim->n_series + (size_t)s] = 0;
        if (sim->cache.fmt >= 0) sim->cache.index[(size_t)el * (size_t)sim->n_series + (size_t)s] = UINT64_MAX;
        double *fs = st + se->first_field;
        for (int32_t f = 0; f < se->n_fields; f++) {
            const ts_field *fd = &sim->fields[se->first_field + f];
            uint64_t key = field_key(base, f);
            double sc = field_scale(fd, fs), v = 0;
            switch (fd->init) {
            case TS_INIT_CONST: v = sc * fd->ia; break;
            case TS_INIT_UNIFORM: v = sc * (fd->ia + (fd->ib - fd->ia) * ts_u01(ts_draw(key, 0, TS_J_INIT))); break;
            case TS_INIT_DRAW: v = step_draw(sim, fd, key, UINT64_MAX, sc); break;
            case TS_INIT_CHOICE:
                v = sc * sim->table[fd->table_off + (int32_t)(ts_draw(key, 0, TS_J_INIT) % (uint64_t)fd->table_len)];
                break;
            case TS_INIT_BY_TAG: {
                int64_t c = tag_choice(sim, entity, s, fd->tag);
                if (c < 0) c = 0;
                v = sc * sim->table[fd->table_off + (int32_t)(c % fd->table_len)];
                break;
            }
            }
            if (fd->evo == TS_EVO_CWALK) {
                if (v < sc * fd->lo) v = sc * fd->lo;
                if (v > sc * fd->hi) v = sc * fd->hi;
            }
            fs[f] = v;
        }
    }
}

/* the written value of a state */
static inline double written(const ts_field *fd, double v)
{
    if (fd->decimals >= 0) {
        double m = 1.0;
        for (int32_t i = 0; i < fd->decimals; i++) m *= 10.0;
        v = trunc(v * m) / m;
    }
    if (fd->type == TS_TYPE_INT && isfinite(v)) {   /* a non-finite value is left for series_values to report */
        if (v >= 9.2e18) v = 9.2e18;
        if (v <= -9.2e18) v = -9.2e18;
        v = (double)(int64_t)v;
    }
    return v;
}

/* the written value of an integer state: truncated toward zero, within int64 */
static inline double written_int(double v)
{
    if (!isfinite(v)) return v;   /* left for series_values to report */
    if (v >= 9.2e18) v = 9.2e18;
    if (v <= -9.2e18) v = -9.2e18;
    return (double)(int64_t)v;
}

/* the first written field of a series whose value is not finite, or -1 */
static int32_t first_bad(const ts_field *fds, int32_t n, const double *out)
{
    double probe = 0.0;                 /* x - x is NaN exactly when x is +/-Inf or NaN */
    for (int32_t f = 0; f < n; f++)
        if (!fds[f].hidden) probe += out[f] - out[f];
    if (probe == 0.0) return -1;
    for (int32_t f = 0; f < n; f++)
        if (!fds[f].hidden && !isfinite(out[f])) return f;
    return -1;
}

/* series_values of a plain series: one loop, ints from their state, the same bits as written() */
static int32_t plain_values(const ts_field *fds, int32_t n, const double *fs, double *out)
{
    double probe = 0.0;
    for (int32_t f = 0; f < n; f++) {
        double v = fds[f].type == TS_TYPE_INT ? written_int(fs[f]) : fs[f];
        out[f] = v;
        probe += v - v;
    }
    return probe == 0.0 ? -1 : first_bad(fds, n, out);
}

/* the written values of (entity, series) at the current tick; returns the
 * first written field whose value is not finite, or -1 */
static int32_t series_values(const ts_sim *sim, int64_t el, int32_t s, double *out)
{
    const ts_series *se = &sim->series[s];
    const double *fs = sim->state + el * sim->n_fields + se->first_field;
    const ts_field *fds = sim->fields + se->first_field;
    if (sim->plain[s]) return plain_values(fds, se->n_fields, fs, out);
    for (int32_t f = 0; f < se->n_fields; f++)
        if (fds[f].evo != TS_EVO_LIN && fds[f].evo != TS_EVO_RATIO)
            out[f] = written(&fds[f], fs[f]);
    for (int32_t f = 0; f < se->n_fields; f++) {
        const ts_field *fd = &fds[f];
        if (fd->evo == TS_EVO_LIN)
            out[f] = written(fd, fd->k0 + fd->k1 * out[fd->src1] + (fd->src2 >= 0 ? fd->k2 * out[fd->src2] : 0.0));
        else if (fd->evo == TS_EVO_RATIO)
            out[f] = written(fd, fd->k0 * out[fd->src1] / out[fd->src2]);
    }
    return first_bad(fds, se->n_fields, out);
}

/* the step kind of a field (TS_STEP_*), or -1 when it never advances */
static int step_kind(const ts_field *fd)
{
    if (fd->evo >= TS_EVO_CONST) return -1;
    if (fd->prob < 1.0 || fd->scale_by >= 0 || fd->dist != TS_DIST_NORMAL) return TS_STEP_OTHER;
    switch (fd->evo) {
    case TS_EVO_CWALK: return TS_STEP_CWALK_N;
    case TS_EVO_MWALK: return TS_STEP_MWALK_N;
    case TS_EVO_WALK: return TS_STEP_WALK_N;
    default: return TS_STEP_OTHER;
    }
}

/* group each series' advancing fields by step kind (sim->step_idx, step_end) */
static int compile_steps(ts_sim *sim)
{
    sim->step_idx = malloc(sizeof(int32_t) * (size_t)sim->n_fields + 1);
    sim->step_end = malloc(sizeof *sim->step_end * (size_t)sim->n_series);
    sim->plain = malloc(sizeof(int32_t) * (size_t)sim->n_series);
    sim->walks = malloc(sizeof(ts_walk) * (size_t)sim->n_fields + 1);
    if (!sim->step_idx || !sim->step_end || !sim->plain || !sim->walks) return TS_ERR_NOMEM;
    for (int32_t s = 0; s < sim->n_series; s++) {
        const ts_series *se = &sim->series[s];
        int32_t n = 0;
        sim->plain[s] = 1;
        for (int32_t f = 0; f < se->n_fields; f++) {
            const ts_field *fd = &sim->fields[se->first_field + f];
            if (fd->evo == TS_EVO_LIN || fd->evo == TS_EVO_RATIO || fd->decimals >= 0 || fd->hidden)
                sim->plain[s] = 0;
        }
        for (int32_t k = 0; k < TS_STEP_KINDS; k++) {
            for (int32_t f = 0; f < se->n_fields; f++)
                if (step_kind(&sim->fields[se->first_field + f]) == k) sim->step_idx[se->first_field + n++] = f;
            sim->step_end[s][k] = n;
        }
        for (int32_t i = 0; i < sim->step_end[s][TS_STEP_WALK_N]; i++) {
            int32_t f = sim->step_idx[se->first_field + i];
            const ts_field *fd = &sim->fields[se->first_field + f];
            sim->walks[se->first_field + i] = (ts_walk){field_key(0, f), fd->a, fd->b, fd->lo, fd->hi, f, fd->reset};
        }
    }
    return TS_OK;
}

/* one field of any kind from tick t to t + 1 (the general interpreter) */
static inline void step_other(const ts_sim *sim, const ts_field *fd, double *fs, int32_t f, uint64_t base, uint64_t t)
{
    uint64_t key = field_key(base, f);
    if (fd->prob < 1.0 && ts_u01(ts_draw(key, t, TS_J_LAZY)) >= fd->prob) return;
    double sc = field_scale(fd, fs);
    double d = step_draw(sim, fd, key, t, sc);
    switch (fd->evo) {
    case TS_EVO_FRESH: fs[f] = d; break;
    case TS_EVO_WALK: fs[f] += d; break;
    case TS_EVO_MWALK: fs[f] += fabs(d); break;
    case TS_EVO_CWALK: {
        double v = fs[f] + d, lo = sc * fd->lo, hi = sc * fd->hi;
        if (v < lo) v = lo;
        if (v > hi) v = hi;
        if (fd->reset && v <= lo) v = hi;
        fs[f] = v;
        break;
    }
    }
}

/* the normal step a + b * N(0, 1) of walk w (scale 1: the same bits as step_draw);
 * at_tick is base + t * TS_TICK_STRIDE, the series' draws' common part */
static inline double normal_step(const ts_sim *sim, const ts_walk *w, uint64_t base, uint64_t at_tick, uint64_t t)
{
    return w->a + w->b * ts_normal_of(&sim->zig, base + w->key, t, ts_mix64(at_tick + w->key));
}

/* advance the state of (entity, series) from tick t to t + 1: one loop per step kind */
static void series_advance(ts_sim *sim, int64_t el, int32_t s, uint64_t t)
{
    const ts_series *se = &sim->series[s];
    double *fs = sim->state + el * sim->n_fields + se->first_field;
    const ts_field *fds = sim->fields + se->first_field;
    const int32_t *idx = sim->step_idx + se->first_field, *end = sim->step_end[s];
    const ts_walk *w = sim->walks + se->first_field;
    uint64_t base = sim->base[(size_t)el * (size_t)sim->n_series + (size_t)s], at = base + t * TS_TICK_STRIDE;
    int32_t i = 0;
    for (; i < end[TS_STEP_CWALK_N]; i++) {
        double v = fs[w[i].f] + normal_step(sim, &w[i], base, at, t);
        if (v < w[i].lo) v = w[i].lo;
        if (v > w[i].hi) v = w[i].hi;
        if (w[i].reset && v <= w[i].lo) v = w[i].hi;
        fs[w[i].f] = v;
    }
    for (; i < end[TS_STEP_MWALK_N]; i++)
        fs[w[i].f] += fabs(normal_step(sim, &w[i], base, at, t));
    for (; i < end[TS_STEP_WALK_N]; i++)
        fs[w[i].f] += normal_step(sim, &w[i], base, at, t);
    for (; i < end[TS_STEP_OTHER]; i++)
        step_other(sim, &fds[idx[i]], fs, idx[i], base, t);
}

/* ---- imperfect delivery ---------------------------------------------------- */

typedef struct fate {
    int deliver;          /* 0: dropped or missing */
    int64_t delay;        /* epochs late */
    int32_t null_field, null_tag;
} fate;

static fate entry_fate(const ts_sim *sim, int64_t el, int32_t s, int64_t t)
{
    fate r = {1, 0, -1, -1};
    if (!sim->has_faults) return r;
    const ts_faults *fa = &sim->faults;
    int64_t entity = sim->entity_lo + el;
    uint64_t gk = ts_stream_key(sim->seed, entity, s, TS_SLOT_FAULT_GROUP);
    uint64_t ek = ts_stream_key(sim->seed, entity, s, TS_SLOT_FAULT);
    uint64_t g = (uint64_t)(t / fa->group_size), ut = (uint64_t)t;
    if (ts_u01(ts_draw(gk, g, 0)) < fa->group_drop || ts_u01(ts_draw(ek, ut, 0)) < fa->missing) {
        r.deliver = 0;
        return r;
    }
    if (ts_u01(ts_draw(gk, g, 1)) < fa->group_late)
        r.delay = fa->group_size;
    else if (fa->max_delay > 0 && ts_u01(ts_draw(ek, ut, 1)) < fa->late)
        r.delay = 1 + (int64_t)(ts_draw(ek, ut, 2) % (uint64_t)fa->max_delay);
    const ts_series *se = &sim->series[s];
    int32_t visible = 0;
    for (int32_t f = 0; f < se->n_fields; f++) visible += !sim->fields[se->first_field + f].hidden;
    if (visible > 1 && ts_u01(ts_draw(ek, ut, 3)) < fa->null_field) {
        int32_t k = (int32_t)(ts_draw(ek, ut, 4) % (uint64_t)visible);
        for (int32_t f = 0; f < se->n_fields; f++) {
            if (sim->fields[se->first_field + f].hidden) continue;
            if (k-- == 0) { r.null_field = f; break; }
        }
    }
    int32_t ntags = ts_series_ntags(sim, s);
    if (ntags > 1 && ts_u01(ts_draw(ek, ut, 5)) < fa->null_tag)
        r.null_tag = 1 + (int32_t)(ts_draw(ek, ut, 6) % (uint64_t)(ntags - 1));
    return r;
}

/* ---- construction ---------------------------------------------------------- */

void ts_sim_free(ts_sim *sim)
{
    if (!sim) return;
    free(sim->strtab); free(sim->stroff); free(sim->parts); free(sim->tags);
    free(sim->series); free(sim->fields); free(sim->table); free(sim->itable);
    free(sim->scratch); free(sim->pfx_scratch); free(sim->visible);
    free(sim->step_idx); free(sim->step_end); free(sim->plain); free(sim->walks);
    free(sim->items); free(sim->item_first); free(sim->item_text); free(sim->csv_head);
    free(sim->stat_fields); free(sim->stat_first); free(sim->stat_floats);
    for (int f = 0; f < TS_FMT_COUNT; f++) {
        free(sim->bound[f]); free(sim->pfx_bound[f]); free(sim->piece[f]); free(sim->piece_off[f]);
    }
    free(sim);
}

/* each field's name as format fmt writes it before a value, built once */
static int make_pieces(ts_sim *sim, int32_t fmt)
{
    const ts_format_ops *ops = ts_formats[fmt];
    size_t cap = 1 + TS_PIECE_PAD;
    for (int32_t f = 0; f < sim->n_fields; f++)
        cap += (size_t)ops->name_factor * ts_strlen(sim, sim->fields[f].name) + 4;
    sim->piece[fmt] = malloc(cap);
    sim->piece_off[fmt] = malloc(sizeof(uint32_t) * ((size_t)sim->n_fields + 1));
    if (!sim->piece[fmt] || !sim->piece_off[fmt]) return TS_ERR_NOMEM;
    size_t n = 0;
    for (int32_t f = 0; f < sim->n_fields; f++) {
        sim->piece_off[fmt][f] = (uint32_t)n;
        n += ops->piece ? ops->piece(sim, f, sim->piece[fmt] + n) : 0;
    }
    sim->piece_off[fmt][sim->n_fields] = (uint32_t)n;
    return TS_OK;
}

static void compute_bounds(ts_sim *sim, int32_t fmt)
{
    const ts_format_ops *ops = ts_formats[fmt];
    for (int32_t s = 0; s < sim->n_series; s++) {
        const ts_series *se = &sim->series[s];
        uint64_t b = 64 + (uint64_t)ops->name_factor * ts_strlen(sim, se->name);
        for (int32_t k = 0; k < ts_series_ntags(sim, s); k++)
            b += (uint64_t)ops->name_factor * (ts_strlen(sim, ts_series_tag(sim, s, k)->key) +
                                               ts_tag_value_bound(sim, s, k)) + (uint64_t)ops->tag_overhead;
        sim->pfx_bound[fmt][s] = b;
        b += TS_STAMP_MAX;
        for (int32_t f = 0; f < se->n_fields; f++)
            b += (uint64_t)ops->name_factor * ts_strlen(sim, sim->fields[se->first_field + f].name) +
                 TS_DOUBLE_MAX_CHARS + 8;
        sim->bound[fmt][s] = b;
    }
}

static uint64_t mem_layout(const ts_sim *sim, int32_t fmt, uint64_t off[TS_MEM_PARTS],
                           uint64_t stride[TS_MEM_PARTS]);

/* the per-entity memory of every cache format has a size below 2^64 */
static int memory_fits(const ts_sim *sim)
{
    uint64_t off[TS_MEM_PARTS], stride[TS_MEM_PARTS];
    for (int32_t fmt = -1; fmt < TS_FMT_COUNT; fmt++)
        if (mem_layout(sim, fmt, off, stride) == UINT64_MAX) return 0;
    return 1;
}

/* the last timestamp, a late entry's included, is an int64 */
static int times_fit(const ts_sim *sim)
{
    int64_t span, end;
    return !__builtin_mul_overflow(sim->total_epochs, sim->interval_ns, &span) &&
           !__builtin_add_overflow(sim->start_ns, span, &end);
}

ts_sim *ts_sim_new(const ts_schema *sc, uint64_t seed, int64_t entity_lo, int64_t entity_hi,
                   int64_t start_ns, int64_t interval_ns, int64_t epochs, char *err, size_t err_cap)
{
    if (!sc) { fail(err, err_cap, "no schema"); return NULL; }
    if (check_schema(sc, err, err_cap) != TS_OK) return NULL;
    if (entity_lo < 0 || entity_hi < entity_lo) { fail(err, err_cap, "bad entity range"); return NULL; }
    if (interval_ns <= 0 || epochs < 0) { fail(err, err_cap, "bad time range"); return NULL; }

    ts_sim *sim = calloc(1, sizeof *sim);
    if (!sim) { fail(err, err_cap, "out of memory"); return NULL; }
    int32_t nstr = sc->n_strings;
    sim->strtab = dup_array(sc->strtab, (size_t)sc->stroff[nstr], 1);
    sim->stroff = dup_array(sc->stroff, (size_t)nstr + 1, sizeof(int32_t));
    sim->n_strings = nstr;
    sim->parts = dup_array(sc->parts, (size_t)sc->n_parts, sizeof(ts_part));
    sim->tags = dup_array(sc->tags, (size_t)sc->n_tags, sizeof(ts_tag));
    sim->n_tags = sc->n_tags;
    sim->n_entity_tags = sc->n_entity_tags;
    sim->series = dup_array(sc->series, (size_t)sc->n_series, sizeof(ts_series));
    sim->n_series = sc->n_series;
    sim->fields = dup_array(sc->fields, (size_t)sc->n_fields, sizeof(ts_field));
    sim->n_fields = sc->n_fields;
    sim->table = dup_array(sc->table, (size_t)sc->n_table, sizeof(double));
    sim->itable = dup_array(sc->itable, (size_t)sc->n_itable, sizeof(int32_t));
    sim->faults = sc->faults;
    const ts_faults *fa = &sc->faults;
    sim->has_faults = fa->group_drop > 0 || fa->group_late > 0 || fa->missing > 0 ||
                      fa->late > 0 || fa->null_field > 0 || fa->null_tag > 0;
    if (sim->has_faults && sim->faults.group_size < 1) sim->faults.group_size = 1;

    sim->seed = seed;
    sim->entity_lo = entity_lo;
    sim->n_entities = entity_hi - entity_lo;
    sim->start_ns = start_ns;
    sim->interval_ns = interval_ns;
    sim->epochs = epochs;
    sim->visible = calloc((size_t)sim->n_series, sizeof(int32_t));
    for (int32_t s = 0; sim->visible && s < sim->n_series; s++) {
        if (sim->series[s].n_fields > sim->max_series_fields) sim->max_series_fields = sim->series[s].n_fields;
        for (int32_t f = 0; f < sim->series[s].n_fields; f++)
            sim->visible[s] += !sim->fields[sim->series[s].first_field + f].hidden;
    }
    ts_zig_init(&sim->zig);

    int ok = sim->visible && sim->strtab && sim->stroff && sim->parts && sim->tags && sim->series && sim->fields &&
             sim->table && sim->itable;
    sim->scratch = malloc(sizeof(double) * (size_t)sim->max_series_fields);
    ok = ok && sim->scratch && compile_steps(sim) == TS_OK && ts_build_items(sim) == TS_OK;

    int64_t late_max = 0;
    if (sim->has_faults) {
        if (fa->group_late > 0) late_max = sim->faults.group_size;
        if (fa->late > 0 && fa->max_delay > late_max) late_max = fa->max_delay;
    }
    sim->total_epochs = epochs + (epochs > 0 ? late_max : 0);
    if (late_max > 0) sim->pend_cap = (int32_t)late_max + 1;
    uint64_t scratch = 0;
    for (int32_t f = 0; ok && f < TS_FMT_COUNT; f++) {
        sim->bound[f] = malloc(sizeof(uint64_t) * (size_t)sim->n_series);
        sim->pfx_bound[f] = malloc(sizeof(uint64_t) * (size_t)sim->n_series);
        ok = sim->bound[f] && sim->pfx_bound[f] && make_pieces(sim, f) == TS_OK;
        if (ok) compute_bounds(sim, f);
        if (ok && ts_sim_record_bound(sim, f) > scratch) scratch = ts_sim_record_bound(sim, f);
        sim->stamp_epoch[f] = -1;
    }
    if (ok) ok = (sim->pfx_scratch = malloc(scratch + TS_PIECE_PAD)) != NULL;   /* read 32 bytes at a time */
    sim->cache.fmt = -1;
    if (!ok) {
        ts_sim_free(sim);
        fail(err, err_cap, "out of memory");
        return NULL;
    }
    if (!times_fit(sim) || !memory_fits(sim)) {
        ts_sim_free(sim);
        fail(err, err_cap, "%lld entities over %lld epochs: beyond what 64-bit sizes and times hold",
             (long long)(entity_hi - entity_lo), (long long)epochs);
        return NULL;
    }
    return sim;
}

/* ---- the per-entity memory ------------------------------------------------------ */

/* the bytes of the tag part cache's text before local entity el's: where its first tag
 * part starts, or, before it has one, all that is built (in epoch 0, entity order) */
static uint64_t blob_behind(const ts_sim *sim, int64_t el)
{
    const ts_prefix_cache *c = &sim->cache;
    if (c->fmt < 0) return 0;
    if (el >= sim->n_entities) return c->used;
    uint64_t e = c->index[(size_t)el * (size_t)sim->n_series];
    return el < sim->inited && e != UINT64_MAX ? e >> TS_PFX_LEN_BITS : c->used;
}

#define TS_MEM_ALIGN 4096u   /* each part starts on a page: a part's pages hold only its own entities */

/* a * b and a + b, or UINT64_MAX where the exact result does not fit: a size no memory has */
static uint64_t mul_sat(uint64_t a, uint64_t b)
{
    uint64_t r;
    return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

static uint64_t add_sat(uint64_t a, uint64_t b)
{
    uint64_t r;
    return __builtin_add_overflow(a, b, &r) ? UINT64_MAX : r;
}

/* bytes per local entity of each part (TS_MEM_*), with the tag parts of format fmt cached (-1: none) */
static void mem_strides(const ts_sim *sim, int32_t fmt, uint64_t stride[TS_MEM_PARTS])
{
    uint64_t ns = (uint64_t)sim->n_series, cap = (uint64_t)sim->pend_cap;
    stride[TS_MEM_BASE] = sizeof(uint64_t) * ns;
    stride[TS_MEM_STATE] = sizeof(double) * (uint64_t)sim->n_fields;
    stride[TS_MEM_PEND_N] = cap ? sizeof(int32_t) * ns : 0;
    stride[TS_MEM_PEND] = mul_sat(sizeof(ts_pending) * ns, cap);
    stride[TS_MEM_PEND_VALS] = mul_sat(mul_sat(sizeof(double) * ns, cap), (uint64_t)sim->max_series_fields);
    stride[TS_MEM_PFX_INDEX] = fmt >= 0 ? sizeof(uint64_t) * ns : 0;
    stride[TS_MEM_PFX_BLOB] = 0;
    for (int32_t s = 0; fmt >= 0 && s < sim->n_series; s++)
        stride[TS_MEM_PFX_BLOB] = add_sat(stride[TS_MEM_PFX_BLOB], sim->pfx_bound[fmt][s]);
}

/* where each part starts; returns the bytes of the whole (UINT64_MAX: beyond 64 bits) */
static uint64_t mem_layout(const ts_sim *sim, int32_t fmt, uint64_t off[TS_MEM_PARTS],
                           uint64_t stride[TS_MEM_PARTS])
{
    uint64_t used = 0;
    mem_strides(sim, fmt, stride);
    for (int i = 0; i < TS_MEM_PARTS; i++) {
        uint64_t pad = i == TS_MEM_PFX_BLOB && fmt >= 0 ? TS_PIECE_PAD : 0;   /* tag parts: read 32 bytes at a time */
        uint64_t part = add_sat(mul_sat(stride[i], (uint64_t)sim->n_entities), pad + TS_MEM_ALIGN - 1);
        off[i] = used;
        used = add_sat(used, part / TS_MEM_ALIGN * TS_MEM_ALIGN);
    }
    return used;
}

uint64_t ts_sim_state_bytes(const ts_sim *sim, int32_t fmt)
{
    uint64_t off[TS_MEM_PARTS], stride[TS_MEM_PARTS];
    if (!sim || fmt < -1 || fmt >= TS_FMT_COUNT) return 0;
    return mem_layout(sim, fmt, off, stride);
}

int32_t ts_sim_set_memory(ts_sim *sim, void *mem, uint64_t cap, int32_t fmt)
{
    uint64_t off[TS_MEM_PARTS], stride[TS_MEM_PARTS];
    if (!sim || !mem || sim->mem || ((uintptr_t)mem & 7) || fmt < -1 || fmt >= TS_FMT_COUNT) return TS_ERR_ARG;
    if (cap < mem_layout(sim, fmt, off, stride)) return TS_ERR_SPACE;
    char *m = mem;
    sim->mem = mem;
    sim->base = (uint64_t *)(m + off[TS_MEM_BASE]);
    sim->state = (double *)(m + off[TS_MEM_STATE]);
    sim->pend_n = (int32_t *)(m + off[TS_MEM_PEND_N]);
    sim->pend = (ts_pending *)(m + off[TS_MEM_PEND]);
    sim->pend_vals = (double *)(m + off[TS_MEM_PEND_VALS]);
    sim->cache.fmt = fmt;
    sim->cache.index = (uint64_t *)(m + off[TS_MEM_PFX_INDEX]);
    sim->cache.blob = m + off[TS_MEM_PFX_BLOB];
    sim->cache.cap = stride[TS_MEM_PFX_BLOB] * (uint64_t)sim->n_entities;
    return TS_OK;
}

int32_t ts_sim_state_behind(const ts_sim *sim, uint64_t *parts, int32_t max_parts)
{
    uint64_t off[TS_MEM_PARTS], stride[TS_MEM_PARTS];
    if (!sim || !parts || max_parts < TS_MEM_PARTS) return TS_ERR_ARG;
    mem_layout(sim, sim->cache.fmt, off, stride);
    int64_t behind = sim->t >= sim->total_epochs ? sim->n_entities : sim->el;
    for (int i = 0; i < TS_MEM_PARTS; i++) {
        parts[3 * i] = off[i];
        parts[3 * i + 1] = stride[i] * (uint64_t)behind;
        parts[3 * i + 2] = stride[i] * (uint64_t)sim->n_entities;
    }
    parts[3 * TS_MEM_PFX_BLOB + 1] = blob_behind(sim, behind);
    return TS_MEM_PARTS;
}

uint64_t ts_sim_record_bound(const ts_sim *sim, int32_t fmt)
{
    uint64_t m = 0;
    if (fmt < 0 || fmt >= TS_FMT_COUNT) return 0;
    for (int32_t s = 0; s < sim->n_series; s++)
        if (sim->bound[fmt][s] > m) m = sim->bound[fmt][s];
    return m;
}

/* ---- series churn ------------------------------------------------------------- */

/* how often entity was replaced by the start of epoch's churn period: the periods
 * 1..k replace the positions [0, k * churn_m) of the cycle, counted from churn_off */
static int64_t churn_gen(const ts_sim *sim, int64_t entity, int64_t epoch)
{
    if (!sim->churn_m || epoch <= 0) return 0;
    __int128 k = (__int128)epoch * sim->interval_ns / sim->churn_ns;
    __int128 reach = k * sim->churn_m;
    int64_t pos = (entity - sim->churn_off) % sim->churn_n;
    if (pos < 0) pos += sim->churn_n;
    return reach > pos ? (int64_t)((reach - pos - 1) / sim->churn_n + 1) : 0;
}

int64_t ts_sim_churn_generation(const ts_sim *sim, int64_t entity, int64_t epoch)
{
    return sim ? churn_gen(sim, entity, epoch) : 0;
}

int32_t ts_sim_set_churn(ts_sim *sim, int64_t entities, int64_t per_period, int64_t period_ns)
{
    if (!sim || sim->mem || sim->n_entity_tags < 1 || sim->has_faults || entities < sim->entity_lo + sim->n_entities ||
        entities < 1 || per_period < 1 || per_period > entities || period_ns < 1)
        return TS_ERR_ARG;
    sim->churn_n = entities;
    sim->churn_m = per_period;
    sim->churn_ns = period_ns;
    sim->churn_off = (int64_t)(ts_stream_key(sim->seed, -1, -1, TS_SLOT_CHURN) % (uint64_t)entities);
    uint64_t scratch = 0;
    for (int32_t f = 0; f < TS_FMT_COUNT; f++) {      /* room for the longer first tag */
        compute_bounds(sim, f);
        if (ts_sim_record_bound(sim, f) > scratch) scratch = ts_sim_record_bound(sim, f);
    }
    char *grown = realloc(sim->pfx_scratch, scratch + TS_PIECE_PAD);
    if (!grown) return TS_ERR_NOMEM;
    sim->pfx_scratch = grown;
    return TS_OK;
}

/* ---- output sinks ------------------------------------------------------------- */

typedef struct sink {
    int32_t fmt;          /* -1: columns (cols NULL: counted only) */
    char *buf;
    uint64_t cap, used;
    const ts_columns *cols;
    int64_t row_cap;      /* records this call may write (columns: the arrays' length) */
    ts_fill_result *res;
} sink;

/* where the cache keeps (el, s)'s tag part under churn: a slot of its bound of its own, so a
 * renewed series' text is rebuilt in place (without churn the parts are packed in the order
 * the cursor first needs them) */
static uint64_t churn_slot(const ts_sim *sim, int32_t fmt, int64_t el, int32_t s)
{
    uint64_t before = 0, all = 0;
    for (int32_t i = 0; i < sim->n_series; i++) {
        if (i == s) before = all;
        all += sim->pfx_bound[fmt][i];
    }
    return (uint64_t)el * all + before;
}

/* the tag part of (el, s) in format fmt from the cache, built there the first time and,
 * under churn, again at a renewed series' first record (renew); NULL when fmt is not the
 * one cached (or it does not fit) */
static const char *cached_prefix(ts_sim *sim, int32_t fmt, int64_t el, int32_t s, int renew, size_t *len)
{
    ts_prefix_cache *c = &sim->cache;
    if (fmt != c->fmt) return NULL;
    uint64_t *e = &c->index[(size_t)el * (size_t)sim->n_series + (size_t)s];
    if (*e == UINT64_MAX || renew) {
        uint64_t at = sim->churn_m ? churn_slot(sim, fmt, el, s) : c->used;
        if (!sim->churn_m && c->cap - c->used < sim->pfx_bound[fmt][s]) return NULL;
        size_t n = ts_formats[fmt]->prefix(sim, sim->entity_lo + el, s, -1, c->blob + at);
        *e = UINT64_MAX;
        if (n >> TS_PFX_LEN_BITS) return NULL;
        *e = at << TS_PFX_LEN_BITS | n;
        if (at + n > c->used) c->used = at + n;
    }
    *len = (size_t)(*e & ((UINT64_C(1) << TS_PFX_LEN_BITS) - 1));
    return c->blob + (*e >> TS_PFX_LEN_BITS);
}

/* one record's row of columns (ts_sim_fill_columns) */
static __attribute__((noinline)) void emit_columns(const ts_sim *sim, const sink *k, int64_t el, int32_t s,
                                                   int64_t epoch, const double *vals, int32_t null_field,
                                                   int32_t null_tag)
{
    const ts_series *se = &sim->series[s];
    const ts_columns *c = k->cols;
    int64_t i = k->res->rows;
    c->time[i] = sim->start_ns + epoch * sim->interval_ns;
    c->entity[i] = sim->entity_lo + el;
    c->series[i] = s;
    c->null_tag[i] = null_tag;
    c->delay[i] = (int32_t)(sim->t - epoch);
    double *row = c->values + i * c->width;
    int32_t w = 0;
    for (int32_t f = 0; f < se->n_fields && w < c->width; f++) {
        if (sim->fields[se->first_field + f].hidden) continue;
        row[w++] = f == null_field ? NAN : vals[f];
    }
    for (; w < c->width; w++) row[w] = NAN;
}

/* one record's text at the end of k's buffer; 0 when it does not fit */
static int emit_text(ts_sim *sim, sink *k, int64_t el, int32_t s, int64_t epoch, const double *vals,
                     int32_t null_field, int32_t null_tag, int renew)
{
    const ts_format_ops *ops = ts_formats[k->fmt];
    if (k->cap - k->used < sim->bound[k->fmt][s]) return 0;
    int64_t time_ns = sim->start_ns + epoch * sim->interval_ns;
    const char *stamp = sim->stamp[k->fmt];
    size_t stamp_len;
    char local[TS_STAMP_MAX];
    if (epoch == sim->stamp_epoch[k->fmt]) {
        stamp_len = sim->stamp_len[k->fmt];
    } else if (epoch == sim->t) {   /* the current epoch's, kept for its other records */
        stamp_len = sim->stamp_len[k->fmt] = ops->stamp(time_ns, sim->stamp[k->fmt]);
        sim->stamp_epoch[k->fmt] = epoch;
    } else {                        /* a late record's */
        stamp_len = ops->stamp(time_ns, local);
        stamp = local;
    }
    size_t plen = 0;
    const char *pfx = null_tag >= 0 ? NULL : cached_prefix(sim, k->fmt, el, s, renew, &plen);  /* cursor's order */
    ts_rec r = {sim->entity_lo + el, s, time_ns, vals, null_field, null_tag};
    if (!pfx) {
        /* not from the cache (a null tag, or a format other than the cached one): build it now */
        plen = ops->prefix(sim, r.entity, s, null_tag, sim->pfx_scratch);
        pfx = sim->pfx_scratch;
    }
    k->used += ops->record(sim, &r, pfx, plen, stamp, stamp_len, k->buf + k->used);
    return 1;
}

/* add one record's written values to the statistics (ts_sim_set_stats): an integer
 * as the text formats write it, truncated, into an exact 128-bit sum; a float into a
 * compensated sum (TwoSum). min and max start at +Inf and -Inf (ts_sim_set_stats) */
static __attribute__((noinline)) void add_stats(ts_sim *sim, int64_t el, int32_t s, const double *vals,
                                                int32_t null_field)
{
    size_t slot = (size_t)el * (size_t)sim->n_series + (size_t)s;
    if (!sim->seen[slot]) {
        sim->seen[slot] = 1;
        sim->series_seen[s]++;
    }
    const int32_t *idx = sim->stat_fields + sim->stat_first[s], *mid = idx + sim->stat_floats[s],
                  *end = sim->stat_fields + sim->stat_first[s + 1];
    ts_field_stats *sts = sim->stats + sim->series[s].first_field;
    for (; idx < mid; idx++) {
        int32_t f = *idx;
        if (f == null_field) continue;
        ts_field_stats *st = &sts[f];
        double v = vals[f], t = st->sum + v, z = t - st->sum;
        st->comp += (st->sum - (t - z)) + (v - z);
        st->sum = t;
        st->count++;
        st->sum_abs += fabs(v);
        st->min = v < st->min ? v : st->min;
        st->max = v > st->max ? v : st->max;
    }
    for (; idx < end; idx++) {
        int32_t f = *idx;
        if (f == null_field) continue;
        ts_field_stats *st = &sts[f];
        int64_t x = (int64_t)vals[f];
        unsigned __int128 acc = ((unsigned __int128)(uint64_t)st->isum_hi << 64 | st->isum_lo) +
                                (unsigned __int128)(__int128)x;
        st->isum_lo = (uint64_t)acc;
        st->isum_hi = (int64_t)(uint64_t)(acc >> 64);
        double v = (double)x;
        st->count++;
        st->sum_abs += fabs(v);
        st->min = v < st->min ? v : st->min;
        st->max = v > st->max ? v : st->max;
    }
}

/* per series, its visible fields for add_stats: float ones, then int ones */
static int32_t index_stats(ts_sim *sim)
{
    free(sim->stat_fields); free(sim->stat_first); free(sim->stat_floats);
    sim->stat_fields = malloc(sizeof(int32_t) * (size_t)sim->n_fields + 1);
    sim->stat_first = malloc(sizeof(int32_t) * ((size_t)sim->n_series + 1));
    sim->stat_floats = malloc(sizeof(int32_t) * (size_t)sim->n_series);
    if (!sim->stat_fields || !sim->stat_first || !sim->stat_floats) return TS_ERR_NOMEM;
    int32_t n = 0;
    for (int32_t s = 0; s < sim->n_series; s++) {
        const ts_series *se = &sim->series[s];
        sim->stat_first[s] = n;
        for (int32_t pass = 0; pass < 2; pass++) {
            for (int32_t f = 0; f < se->n_fields; f++) {
                const ts_field *fd = &sim->fields[se->first_field + f];
                if (!fd->hidden && (fd->type == TS_TYPE_INT) == pass) sim->stat_fields[n++] = f;
            }
            if (pass == 0) sim->stat_floats[s] = n - sim->stat_first[s];
        }
    }
    sim->stat_first[sim->n_series] = n;
    return TS_OK;
}

int32_t ts_sim_set_stats(ts_sim *sim, ts_field_stats *fields, int32_t n_fields, uint8_t *seen,
                         uint64_t seen_cap, int64_t *series, int32_t n_series)
{
    if (!sim) return TS_ERR_ARG;
    if (!fields) {
        sim->stats = NULL;
        return TS_OK;
    }
    if (n_fields != sim->n_fields || n_series != sim->n_series || !series || !seen ||
        seen_cap / (uint64_t)sim->n_series < (uint64_t)sim->n_entities) return TS_ERR_ARG;
    int32_t rc = index_stats(sim);
    if (rc != TS_OK) return rc;
    for (int32_t f = 0; f < n_fields; f++) {
        fields[f].min = INFINITY;
        fields[f].max = -INFINITY;
    }
    sim->stats = fields;
    sim->seen = seen;
    sim->series_seen = series;
    return TS_OK;
}

/* write one record (as text, as columns, or only counted: ts_sim_simulate); 0 when
 * it does not fit */
static int emit(ts_sim *sim, sink *k, int64_t el, int32_t s, int64_t epoch, const double *vals,
                int32_t null_field, int32_t null_tag)
{
    if (k->res->rows >= k->row_cap) return 0;
    int64_t gen = churn_gen(sim, sim->entity_lo + el, epoch);
    int renewed = gen > 0 && gen != churn_gen(sim, sim->entity_lo + el, epoch - 1);   /* a new series' first */
    if (k->fmt >= 0) {
        sim->render_gen = gen;
        int done = emit_text(sim, k, el, s, epoch, vals, null_field, null_tag, renewed);
        sim->render_gen = 0;
        if (!done) return 0;
    } else if (k->cols) {
        emit_columns(sim, k, el, s, epoch, vals, null_field, null_tag);
    }
    if (sim->stats) add_stats(sim, el, s, vals, null_field);
    k->res->rows++;
    k->res->values += sim->visible[s] - (null_field >= 0);
    k->res->series_created += epoch == 0 || renewed;
    return 1;
}

/* ---- the fill loop ------------------------------------------------------------- */

static int32_t next_due(const ts_sim *sim, size_t slot, int64_t t)
{
    const ts_pending *p = sim->pend + slot * (size_t)sim->pend_cap;
    int32_t best = -1;
    for (int32_t i = 0; i < sim->pend_n[slot]; i++)
        if (p[i].due <= t && (best < 0 || p[i].epoch < p[best].epoch)) best = i;
    return best;
}

static double *pend_vals(const ts_sim *sim, size_t slot, int32_t i)
{
    return sim->pend_vals + (slot * (size_t)sim->pend_cap + (size_t)i) * (size_t)sim->max_series_fields;
}

static void pend_remove(ts_sim *sim, size_t slot, int32_t i)
{
    int32_t last = --sim->pend_n[slot];
    if (i != last) {
        sim->pend[slot * (size_t)sim->pend_cap + (size_t)i] = sim->pend[slot * (size_t)sim->pend_cap + (size_t)last];
        memcpy(pend_vals(sim, slot, i), pend_vals(sim, slot, last), sizeof(double) * (size_t)sim->max_series_fields);
    }
}

typedef uint64_t u64x2 __attribute__((vector_size(16)));

/* 1 when every state of a plain series is written as it stands by the text formats
 * (which truncate an integer as written_int does): finite, and inside the range
 * written_int clamps to (NaN fails the test) */
static inline int plain_in_range(const double *fs, int32_t n)
{
    /* on the bits of |v| (NaN and Inf sort above every finite value): adding
     * 2^63 - limit sets the top bit exactly when |v| >= limit; two values at a time */
    const double limit = 9.2e18;
    const uint64_t abs_bits = ~(UINT64_C(1) << 63);
    uint64_t bias, over;
    memcpy(&bias, &limit, sizeof bias);
    bias = (UINT64_C(1) << 63) - bias;
    u64x2 over2 = {0, 0}, b2;
    int32_t f = 0;
    for (; f + 2 <= n; f += 2) {
        memcpy(&b2, fs + f, sizeof b2);
        over2 |= (b2 & abs_bits) + bias;
    }
    over = over2[0] | over2[1];
    if (f < n) {
        uint64_t b;
        memcpy(&b, fs + f, sizeof b);
        over |= (b & abs_bits) + bias;
    }
    return !(over >> 63);
}

/* the written values of (el, s) at the current tick, as series_values: the state
 * itself when `direct` (the record goes out now, as text or only counted) and the
 * series is plain and in range; else series_values into sim->scratch */
static int32_t entry_values(ts_sim *sim, int64_t el, int32_t s, int direct, const double **vals)
{
    const double *fs = sim->state + el * sim->n_fields + sim->series[s].first_field;
    if (direct && sim->plain[s] && plain_in_range(fs, sim->series[s].n_fields)) {
        *vals = fs;
        return -1;
    }
    *vals = sim->scratch;
    return series_values(sim, el, s, sim->scratch);
}

static int32_t run(ts_sim *sim, sink *k, int64_t *marks, int64_t marks_cap)
{
    ts_fill_result *res = k->res;
    int32_t rc = TS_OK, bad;
    if (!sim->mem) return TS_ERR_ARG;   /* no ts_sim_set_memory yet */
    res->first_epoch = sim->t;
    res->n_marks = 0;
    if (sim->n_entities == 0) sim->t = sim->total_epochs;
    while (sim->t < sim->total_epochs) {
        size_t slot = (size_t)sim->el * (size_t)sim->n_series + (size_t)sim->s;
        if (sim->el == sim->inited) init_entity(sim, sim->inited++);   /* epoch 0 reaches it */
        if (sim->stage == 0) {
            if (sim->pend_cap) {
                int32_t i;
                while ((i = next_due(sim, slot, sim->t)) >= 0) {
                    const ts_pending *p = sim->pend + slot * (size_t)sim->pend_cap + (size_t)i;
                    if (!emit(sim, k, sim->el, sim->s, p->epoch, pend_vals(sim, slot, i), p->null_field, p->null_tag))
                        goto stop;
                    pend_remove(sim, slot, i);
                }
            }
            sim->stage = 1;
        }
        if (sim->t < sim->epochs) {
            fate fa = entry_fate(sim, sim->el, sim->s, sim->t);
            if (fa.deliver) {
                const double *vals;
                if ((bad = entry_values(sim, sim->el, sim->s, fa.delay == 0 && !k->cols, &vals)) >= 0) {
                    res->bad_field = sim->series[sim->s].first_field + bad;
                    res->bad_time = sim->start_ns + sim->t * sim->interval_ns;
                    rc = TS_ERR_VALUE;
                    goto stop;
                }
                if (fa.delay == 0) {
                    if (!emit(sim, k, sim->el, sim->s, sim->t, vals, fa.null_field, fa.null_tag))
                        goto stop;
                } else {
                    int32_t i = sim->pend_n[slot]++;
                    ts_pending *p = sim->pend + slot * (size_t)sim->pend_cap + (size_t)i;
                    p->epoch = sim->t;
                    p->due = sim->t + fa.delay;
                    p->null_field = fa.null_field;
                    p->null_tag = fa.null_tag;
                    memcpy(pend_vals(sim, slot, i), sim->scratch, sizeof(double) * (size_t)sim->series[sim->s].n_fields);
                }
            }
            series_advance(sim, sim->el, sim->s, (uint64_t)sim->t);
        }
        sim->stage = 0;
        if (++sim->s == sim->n_series) {
            sim->s = 0;
            if (++sim->el == sim->n_entities) {
                sim->el = 0;
                sim->t++;
                if (marks) {
                    marks[res->n_marks++] = (int64_t)k->used;
                    if (res->n_marks >= marks_cap - 1 && sim->t < sim->total_epochs) break;
                }
            }
        }
    }
stop:
    /* the open epoch's segment, if this call wrote into it */
    if (marks && res->n_marks < marks_cap && k->used > (res->n_marks ? (uint64_t)marks[res->n_marks - 1] : 0))
        marks[res->n_marks++] = (int64_t)k->used;
    res->bytes = k->used;
    res->epoch = sim->t;
    res->done = sim->t >= sim->total_epochs;
    return rc;
}

int32_t ts_sim_fill(ts_sim *sim, int32_t fmt, char *buf, uint64_t cap, int64_t *marks, int64_t marks_cap,
                    ts_fill_result *out)
{
    if (!sim || !out || !buf || fmt < 0 || fmt >= TS_FMT_COUNT) return TS_ERR_ARG;
    if (marks && marks_cap < 2) return TS_ERR_ARG;
    memset(out, 0, sizeof *out);
    if (cap < ts_sim_record_bound(sim, fmt)) return TS_ERR_SPACE;
    sink k = {fmt, buf, cap, 0, NULL, INT64_MAX, out};
    return run(sim, &k, marks, marks_cap);
}

int32_t ts_sim_fill_rows(ts_sim *sim, int32_t fmt, char *buf, uint64_t cap, int64_t max_rows, ts_fill_result *out)
{
    if (!sim || !out || !buf || fmt < 0 || fmt >= TS_FMT_COUNT || max_rows < 1) return TS_ERR_ARG;
    memset(out, 0, sizeof *out);
    if (cap < ts_sim_record_bound(sim, fmt)) return TS_ERR_SPACE;
    sink k = {fmt, buf, cap, 0, NULL, max_rows, out};
    return run(sim, &k, NULL, 0);
}

int32_t ts_sim_fill_columns(ts_sim *sim, const ts_columns *cols, int64_t cap, ts_fill_result *out)
{
    if (!sim || !cols || !out || cap < 1 || cols->width < 0) return TS_ERR_ARG;
    memset(out, 0, sizeof *out);
    sink k = {-1, NULL, 0, 0, cols, cap, out};
    return run(sim, &k, NULL, 0);
}

int32_t ts_sim_simulate(ts_sim *sim, int64_t max_rows, ts_fill_result *out)
{
    if (!sim || !out || max_rows < 1) return TS_ERR_ARG;
    memset(out, 0, sizeof *out);
    sink k = {-1, NULL, 0, 0, NULL, max_rows, out};
    return run(sim, &k, NULL, 0);
}

int32_t ts_sim_tag_values(const ts_sim *sim, int64_t entity, int32_t s, char *buf, uint64_t cap, int32_t *lens,
                          int32_t lens_cap)
{
    if (!sim || s < 0 || s >= sim->n_series) return TS_ERR_ARG;
    int32_t n = ts_series_ntags(sim, s);
    if (n > lens_cap) return TS_ERR_SPACE;
    uint64_t used = 0;
    for (int32_t i = 0; i < n; i++) {
        if (cap - used < ts_tag_value_bound(sim, s, i)) return TS_ERR_SPACE;
        size_t m = ts_tag_value(sim, entity, s, i, buf + used);
        lens[i] = (int32_t)m;
        used += m;
    }
    return n;
}

uint64_t ts_format_doubles(const double *v, int64_t n, char *buf, uint64_t cap, int64_t *ends)
{
    uint64_t used = 0;
    for (int64_t i = 0; i < n; i++) {
        if (cap - used < TS_DOUBLE_MAX_CHARS) return used;
        used += ts_format_double(v[i], buf + used);
        ends[i] = (int64_t)used;
    }
    return used;
}

/* ---- merging several simulators' outputs ------------------------------------------------ */

/* append piece (src, off, len) to the output, joined to the last one when it
 * continues it; 0 when the piece array is full */
static int add_piece(ts_merge_out *o, int64_t src, uint64_t off, uint64_t len)
{
    if (o->n_pieces) {
        int64_t *last = o->pieces + 3 * (o->n_pieces - 1);
        if (last[0] == src && (uint64_t)(last[1] + last[2]) == off) {
            last[2] += (int64_t)len;
            return 1;
        }
    }
    if (o->n_pieces == o->max_pieces) return 0;
    int64_t *p = o->pieces + 3 * o->n_pieces++;
    p[0] = src;
    p[1] = (int64_t)off;
    p[2] = (int64_t)len;
    return 1;
}

/* put source i's segments up to epoch `epoch` in the output: a long segment as
 * a piece of the source's buffer, a short one copied into dst. 0 when s is
 * through that epoch, TS_MERGE_FULL or TS_MERGE_NEED as ts_merge, TS_ERR_ARG on
 * marks that do not fit */
static int32_t merge_source(ts_merge_src *s, int32_t i, int64_t epoch, ts_merge_out *o)
{
    while (s->next < s->n_marks && s->first_epoch + s->next <= epoch) {
        uint64_t end = (uint64_t)s->marks[s->next];
        if (s->marks[s->next] < 0 || end < s->pos || end > s->bytes) return TS_ERR_ARG;
        uint64_t len = end - s->pos;
        if (len >= o->min_ref) {
            if (!add_piece(o, i, s->pos, len)) return TS_MERGE_FULL;
        } else if (len) {
            if (len > o->cap - o->used) len = o->cap - o->used;
            if (!len || !add_piece(o, -1, o->used, len)) return TS_MERGE_FULL;
            memcpy(o->dst + o->used, s->data + s->pos, len);
            o->used += len;
        }
        s->pos += len;
        if (s->pos < end) return TS_MERGE_FULL;
        s->next++;
    }
    return s->next < s->n_marks || s->last ? 0 : TS_MERGE_NEED;
}

static int merge_finished(const ts_merge_src *srcs, int32_t n)
{
    for (int32_t i = 0; i < n; i++)
        if (!srcs[i].last || srcs[i].next < srcs[i].n_marks) return 0;
    return 1;
}

int32_t ts_merge(ts_merge_src *srcs, int32_t n, ts_merge_state *st, ts_merge_out *o)
{
    if (!srcs || !st || !o || !o->dst || !o->pieces || n < 1 || o->cap < 1 || o->min_ref < 1 ||
        o->max_pieces < 1 || st->turn < 0 || st->turn >= n) return TS_ERR_ARG;
    for (int32_t i = 0; i < n; i++)
        if (srcs[i].n_marks < 0 || (srcs[i].n_marks && (!srcs[i].marks || !srcs[i].data))) return TS_ERR_ARG;
    o->used = 0;
    o->n_pieces = 0;
    for (;;) {
        if (st->turn == 0 && merge_finished(srcs, n)) return TS_MERGE_DONE;
        int32_t rc = merge_source(&srcs[st->turn], st->turn, st->epoch, o);
        if (rc != 0) return rc;
        if (++st->turn == n) {
            st->turn = 0;
            st->epoch++;
        }
    }
}
