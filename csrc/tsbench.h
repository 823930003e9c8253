/*
 * tsbench.h -- the whole C API of tsbench's core (phase 1, generate).
 *
 * The part between the CDEF markers is also the cffi cdef: keep it plain C
 * declarations (no includes, no macros with expressions).
 *
 * Model: a schema declares series (measurements), their tags and fields with
 * their evolutions; a simulator runs that schema over an entity range and a
 * time range and fills caller-provided buffers with whole records, in one
 * canonical order: for each epoch, for each entity, for each series.
 *
 * Every random draw is a pure function of (seed, entity, series, slot, tick,
 * draw): values never depend on generation order, process count or format.
 * No globals: each simulator owns its state; all inputs are copied.
 */
#ifndef TSBENCH_H
#define TSBENCH_H

#include <stddef.h>
#include <stdint.h>

/* CDEF BEGIN */
#define TS_API_VERSION 11

/* step distributions: normal(mean=a, sd=b) | uniform[a, b) | constant a */
enum { TS_DIST_NORMAL = 0, TS_DIST_UNIFORM = 1, TS_DIST_CONST = 2 };

/* evolutions; LIN and RATIO are derived from other fields' written values */
enum {
    TS_EVO_FRESH = 0,   /* a fresh draw every tick */
    TS_EVO_WALK = 1,    /* state += step */
    TS_EVO_CWALK = 2,   /* state += step, clamped into [lo, hi] */
    TS_EVO_MWALK = 3,   /* state += |step| (a counter) */
    TS_EVO_CONST = 4,   /* the initial value forever */
    TS_EVO_LIN = 5,     /* k0 + k1 * v[src1] + k2 * v[src2] */
    TS_EVO_RATIO = 6    /* k0 * v[src1] / v[src2] */
};

/* initial state: constant ia | uniform[ia, ib) | a draw of the step
 * distribution | table value picked at random | table value picked by the
 * choice made for a tag of the same series */
enum { TS_INIT_CONST = 0, TS_INIT_UNIFORM = 1, TS_INIT_DRAW = 2,
       TS_INIT_CHOICE = 3, TS_INIT_BY_TAG = 4 };

enum { TS_TYPE_FLOAT = 0, TS_TYPE_INT = 1 };

/* tag value parts: the value is the concatenation of its parts */
enum {
    TS_PART_LIT = 0,       /* string a */
    TS_PART_ENTITY = 1,    /* (entity / x) % y (y = 0: no modulo), zero-padded to width */
    TS_PART_INT = 2,       /* x + r % y, zero-padded to width */
    TS_PART_CHOICE = 3,    /* string a + r % b */
    TS_PART_CHOICE_BY = 4  /* strings picked by the choice of tag a (index in the series' tag
                              list): itable[b + 2c] = first string, itable[b + 2c + 1] = count */
};

/* output formats of ts_sim_fill */
enum { TS_FMT_INFLUX = 0, TS_FMT_CSV = 1, TS_FMT_COUNT = 2 };

/* errors */
enum { TS_OK = 0, TS_ERR_ARG = -1, TS_ERR_NOMEM = -2, TS_ERR_SPACE = -3,
       TS_ERR_VALUE = -5 /* a written value is +/-Inf or NaN: see bad_field, bad_time */ };

typedef struct ts_field {
    int32_t name;          /* string index */
    int32_t type, evo, dist, init;
    double a, b;           /* step distribution parameters */
    double lo, hi;         /* CWALK bounds */
    double ia, ib;         /* initial value parameters */
    int32_t table_off, table_len;  /* INIT_CHOICE / INIT_BY_TAG values in schema.table */
    int32_t tag;           /* INIT_BY_TAG: index in the series' tag list */
    int32_t scale_by;      /* -1, or an earlier CONST field of the series: a, b, lo, hi,
                              ia, ib are multiplied by its value */
    int32_t src1, src2;    /* LIN / RATIO operands (field indices within the series) */
    double k0, k1, k2;
    double prob;           /* probability per tick that the state advances (lazy); 1 = always */
    int32_t decimals;      /* >= 0: written value truncated to this many decimals; -1: off */
    int32_t reset;         /* CWALK: on reaching lo the state jumps to hi (a refill) */
    int32_t hidden;        /* state only: never written */
} ts_field;

typedef struct ts_part {
    int32_t kind, width, a, b;
    int64_t x, y;
} ts_part;

typedef struct ts_tag {
    int32_t key;           /* string index */
    int32_t first_part, n_parts;
} ts_tag;

typedef struct ts_series {
    int32_t name;                  /* string index */
    int32_t first_field, n_fields; /* into schema.fields */
    int32_t first_tag, n_tags;     /* into schema.tags: the series' own tags, written after
                                      the schema's n_entity_tags entity tags */
} ts_series;

/* imperfect delivery (iot, custom schemas): one field per entry of
 * tsbench.schema.FAULT_SETTINGS, the definition of their names, order, types
 * (int: int32_t, float: double), defaults and ranges (tests/test_native.py
 * checks). All probabilities 0 = perfect data. */
typedef struct ts_faults {
    int32_t group_size;    /* each (entity, series) stream is cut into groups of this many epochs */
    double group_drop;     /* per group: every entry dropped */
    double group_late;     /* per group: every entry delivered group_size epochs late */
    double missing;        /* per entry: not delivered */
    double late;           /* per entry: delivered 1..max_delay epochs late */
    double null_field;     /* per entry: one field (not the only one) is null */
    double null_tag;       /* per entry: one tag (never the first) is null */
    int32_t max_delay;
} ts_faults;

typedef struct ts_schema {
    const char *strtab;         /* NUL-separated strings */
    const int32_t *stroff;      /* n_strings + 1 offsets: string i is [stroff[i], stroff[i+1] - 1) */
    int32_t n_strings;
    const ts_part *parts; int32_t n_parts;
    const ts_tag *tags; int32_t n_tags; int32_t n_entity_tags;  /* entity tags come first */
    const ts_series *series; int32_t n_series;
    const ts_field *fields; int32_t n_fields;
    const double *table; int32_t n_table;
    const int32_t *itable; int32_t n_itable;
    ts_faults faults;
} ts_schema;

typedef struct ts_fill_result {
    uint64_t bytes;        /* bytes written into buf (ts_sim_fill) */
    int64_t rows;          /* records written */
    int64_t values;        /* field values written (nulls and hidden fields excluded) */
    int64_t first_epoch;   /* epoch of the first record of this call (emission order) */
    int64_t n_marks;       /* epoch segments recorded in marks */
    int64_t epoch;         /* position after the call: the epoch being emitted */
    int32_t done;          /* 1 when the simulation has emitted everything */
    int32_t bad_field;     /* TS_ERR_VALUE: the field (index in schema.fields) that was not finite */
    int64_t bad_time;      /* TS_ERR_VALUE: its timestamp (ns); the fill stopped before its record */
    int64_t series_created; /* records that were their series' first: epoch 0's, and a churned entity's
                               first of its new generation (ts_sim_set_churn) */
} ts_fill_result;

/* columnar output: one entry per record; values is row-major [cap][width],
 * NaN where a field is null or the series has fewer fields than width */
typedef struct ts_columns {
    int64_t *time;         /* ns since the epoch */
    int64_t *entity;
    int32_t *series;
    int32_t *null_tag;     /* index in the series' tag list of the null tag, or -1 */
    int32_t *delay;        /* epochs the record was delivered late (0: on time) */
    double *values;
    int32_t width;
} ts_columns;

typedef struct ts_sim ts_sim;

int32_t ts_api_version(void);
const char *ts_build_id(void);

/* a new simulator of entities [entity_lo, entity_hi) over epochs ticks of
 * interval_ns from start_ns; NULL on error, with a message in err. It fills
 * nothing until it is handed its per-entity memory (ts_sim_set_memory). */
ts_sim *ts_sim_new(const ts_schema *schema, uint64_t seed, int64_t entity_lo, int64_t entity_hi,
                   int64_t start_ns, int64_t interval_ns, int64_t epochs,
                   char *err, size_t err_cap);
void ts_sim_free(ts_sim *sim);

/* the bytes of per-entity memory the simulator needs (its state, stream keys and
 * late-entry rings, and a cache of each entity's tag parts in format fmt, -1: none),
 * which the caller provides, in memory or mapped from a file. The cache's text is
 * sized by a bound: the bytes used are what was built (pages never written stay
 * untouched) */
uint64_t ts_sim_state_bytes(const ts_sim *sim, int32_t fmt);

/* hand the simulator its per-entity memory, once, before the first fill: mem (8-byte
 * aligned, any content: each entity's part is set when the first epoch reaches it) of
 * cap >= ts_sim_state_bytes(sim, fmt) bytes, kept by the caller until ts_sim_free. Fills
 * in format fmt take tag parts from the cache; others build them for each record.
 * TS_ERR_ARG, TS_ERR_SPACE (cap too small) or TS_OK */
int32_t ts_sim_set_memory(ts_sim *sim, void *mem, uint64_t cap, int32_t fmt);

/* where the cursor stands in that memory: per part (7 of them), three numbers: its
 * offset in mem, the bytes at its start that the rest of the current epoch does not
 * touch (the entities behind the cursor; all of it once the simulation is done), and
 * its bytes. Returns the number of parts, or TS_ERR_ARG (max_parts < 7) */
int32_t ts_sim_state_behind(const ts_sim *sim, uint64_t *parts, int32_t max_parts);

/* value statistics of what the fills write (value verification): per schema field, of its
 * written non-null values as the file holds them (an integer field's value truncated, as
 * written): count, min and max (+Inf and -Inf before the first), the float sum as sum + comp (a
 * compensated sum: comp gathers each addition's rounding error), the sum of magnitudes,
 * and for integer fields the exact sum isum_hi * 2^64 + isum_lo. Hidden fields stay 0. */
typedef struct ts_field_stats {
    int64_t count;
    double sum, comp, sum_abs, min, max;
    uint64_t isum_lo;
    int64_t isum_hi;
} ts_field_stats;

/* from now on every fill of sim (text, columns or simulate) adds what it writes to
 * fields (n_fields = the schema's, zeroed by the caller), and counts in series[s] the
 * (entity, series s) streams with at least one record, marking them in seen (n_entities
 * * n_series bytes, zeroed); it sets each field's min and max to +Inf and -Inf. fields
 * NULL: stop. TS_ERR_ARG on sizes that do not match */
int32_t ts_sim_set_stats(ts_sim *sim, ts_field_stats *fields, int32_t n_fields, uint8_t *seen,
                         uint64_t seen_cap, int64_t *series, int32_t n_series);

/* series churn (a stream's --churn), before ts_sim_set_memory: of the dataset's `entities`
 * (all writers' together), `per_period` are replaced by new ones every period_ns of data
 * time, in turn from an offset the seed draws (period j replaces the per_period entities
 * after period j-1's, cyclically). A replaced entity's series are new: its first entity
 * tag's value gains "_g" and its generation (how often it was replaced so far); the tag
 * part cache keeps each (entity, series) in a slot of its own, rebuilt at a renewal. The
 * schema needs an entity tag and no faults (each series one record an epoch, in order);
 * TS_ERR_ARG otherwise or on bad numbers */
int32_t ts_sim_set_churn(ts_sim *sim, int64_t entities, int64_t per_period, int64_t period_ns);

/* the churn generation of an entity at an epoch (0 without churn) */
int64_t ts_sim_churn_generation(const ts_sim *sim, int64_t entity, int64_t epoch);

/* bytes a single record of the schema can take at most in format fmt */
uint64_t ts_sim_record_bound(const ts_sim *sim, int32_t fmt);

/* fill buf with whole records in format fmt, resuming where the last call
 * stopped. marks (may be NULL) receives, per epoch touched, the end offset of
 * that epoch's records in buf; the first is epoch out.first_epoch. The call
 * stops when the next record or mark does not fit. */
int32_t ts_sim_fill(ts_sim *sim, int32_t fmt, char *buf, uint64_t cap,
                    int64_t *marks, int64_t marks_cap, ts_fill_result *out);

/* as ts_sim_fill without marks, stopping after max_rows (>= 1) records as well:
 * a stream's batch of exactly max_rows records, made where it is sent from */
int32_t ts_sim_fill_rows(ts_sim *sim, int32_t fmt, char *buf, uint64_t cap, int64_t max_rows,
                         ts_fill_result *out);

/* the same records as columns; at most cap records */
int32_t ts_sim_fill_columns(ts_sim *sim, const ts_columns *cols, int64_t cap, ts_fill_result *out);

/* (benchmarks) run the simulation as ts_sim_fill_rows would, up to max_rows (>= 1)
 * records, without writing them anywhere: what making the values costs, apart from
 * formatting them. out gets rows, values, epoch and done as a fill's. */
int32_t ts_sim_simulate(ts_sim *sim, int64_t max_rows, ts_fill_result *out);

/* the tag values (unescaped) of one entity for one series, concatenated into
 * buf with lens[i] = length of value i; returns the number of tags or < 0 */
int32_t ts_sim_tag_values(const ts_sim *sim, int64_t entity, int32_t series,
                          char *buf, uint64_t cap, int32_t *lens, int32_t lens_cap);

/* shortest round-trip text of a double, positional (no exponent); returns length */
uint64_t ts_format_doubles(const double *v, int64_t n, char *buf, uint64_t cap, int64_t *ends);
/* ---- merging several simulators' outputs (phase 1, several processes) ---------------- */

/* one simulator's current buffer, as a ts_sim_fill with marks left it. The
 * caller sets data, bytes, marks, n_marks, first_epoch and last, with next = 0
 * and pos = 0, each time it hands in a buffer; ts_merge advances next and pos.
 * A source of zeros has no buffer yet: its turn asks for one (TS_MERGE_NEED). */
typedef struct ts_merge_src {
    const char *data;
    uint64_t bytes;          /* bytes of records in data (the fill's bytes) */
    const int64_t *marks;    /* end offset of each epoch segment in data */
    int64_t n_marks;
    int64_t first_epoch;     /* epoch of segment 0 */
    int32_t last;            /* 1: the simulator has nothing after this buffer */
    int64_t next;            /* the segment being copied */
    uint64_t pos;            /* bytes of data already copied */
} ts_merge_src;

/* where a merge stands: the epoch being merged, the source whose turn it is
 * (start from zeros) */
typedef struct ts_merge_state {
    int64_t epoch;
    int32_t turn;
} ts_merge_state;

enum { TS_MERGE_DONE = 0, TS_MERGE_FULL = 1, TS_MERGE_NEED = 2 };

/* where a merge puts its output: a list of pieces, each (source, offset,
 * length) of that source's current buffer, or (-1, offset, length) of dst.
 * Segments of min_ref bytes or more are referenced where they are; shorter
 * ones are copied into dst (so a merge of small segments does not make a piece
 * of each). The caller sets dst, cap, min_ref (>= 1), pieces (3 int64 each) and
 * max_pieces; ts_merge sets used and n_pieces. */
typedef struct ts_merge_out {
    char *dst;
    uint64_t cap;
    uint64_t used;           /* bytes copied into dst */
    uint64_t min_ref;
    int64_t *pieces;
    int64_t max_pieces;
    int64_t n_pieces;
} ts_merge_out;

/* the sources' records in canonical order, as pieces: for each epoch, source
 * 0's segment of it, then source 1's ... (sources: simulators of consecutive
 * entity ranges). Stops when dst or the piece array is full (TS_MERGE_FULL),
 * when source st->turn has used up a buffer that is not its last
 * (TS_MERGE_NEED: write the pieces, then hand in its next and call again), or
 * when everything is merged (TS_MERGE_DONE). A piece of a source's buffer is
 * valid until that source's next buffer is handed in. < 0 on bad input. */
int32_t ts_merge(ts_merge_src *srcs, int32_t n, ts_merge_state *st, ts_merge_out *out);

/* ---- batch cutting (phase 2: load) ---------------------------------------------------- */

/* what one cut took: whole records only */
typedef struct {
    uint64_t bytes;        /* bytes of the records taken, newlines included */
    uint64_t rows;         /* records (non-blank lines) */
    uint64_t values;       /* field values: influx fields; csv non-empty field columns */
} ts_cut_result;

/* the measurements of a CSV file: names (concatenated, name_off has n+1
 * offsets) and, per measurement, the tag columns between time and fields */
typedef struct {
    const char *names;
    const uint32_t *name_off;
    const uint32_t *n_tags;
    uint32_t n;
} ts_csv_layout;

/* one measurement's share of a split batch: dst[offset, offset+bytes) */
typedef struct {
    uint64_t offset;
    uint64_t bytes;
    uint64_t rows;
    uint64_t values;
} ts_part_out;

/* take up to max_rows whole records from buf[0, len). A trailing line with no
 * newline is taken only when final != 0. layout is needed for csv values and
 * may be NULL otherwise. Returns 0, or < 0 (-4: a csv line names a
 * measurement the layout lacks; out->bytes is that line's offset). */
int32_t ts_cut(int32_t fmt, const ts_csv_layout *layout, const char *buf, uint64_t len,
               uint64_t max_rows, int32_t final, ts_cut_result *out);

/* copy the csv records of buf[0, len) into dst grouped by measurement, each
 * line without its measurement column; parts[i] tells where measurement i's
 * lines are (dst_cap >= len suffices). Returns 0 or < 0 as ts_cut (-4 with
 * *err_pos = the offending line's offset). */
int32_t ts_split_csv(const ts_csv_layout *layout, const char *buf, uint64_t len,
                     char *dst, uint64_t dst_cap, ts_part_out *parts, uint64_t *err_pos);

/* the records of buf[0, len) into dst grouped into n parts by their series (an FNV-1a
 * hash of the series key mod n: influx, the measurement and tags; csv, the measurement
 * and tag columns, which needs layout), each line whole and ending in a newline;
 * parts[i] tells where part i's lines are (dst_cap >= len + 1 suffices). Returns 0
 * or < 0 as ts_split_csv. */
int32_t ts_route_series(int32_t fmt, const ts_csv_layout *layout, const char *buf, uint64_t len, uint32_t n,
                        char *dst, uint64_t dst_cap, ts_part_out *parts, uint64_t *err_pos);

/* ---- rendering CSV parts through a template (phase 2: load) --------------------------- */

/* errors of ts_render, besides TS_ERR_ARG and TS_ERR_SPACE */
enum { TS_ERR_CSV = -6,      /* a malformed CSV line: an unterminated quote, text after a closing quote */
       TS_ERR_TIME = -7,     /* a time encoding of a value that is not YYYY-MM-DDTHH:MM:SS[.f{1,9}]Z */
       TS_ERR_COLUMN = -8,   /* an op names a column the line lacks */
       TS_ERR_NUMBER = -9 }; /* a number encoding of a value that is not a number (or out of range) */

/* OPEN starts a value made of the ops up to its CLOSE (nested 4 deep at most), whose 4-byte
 * length the CLOSE writes in front: with enc TS_OPEN_CQL a CQL [bytes] (big-endian, the length of
 * what follows), with TS_OPEN_BSON a BSON document (little-endian, the whole document's,
 * the CLOSE writes its final 0 byte too) */
enum { TS_OP_LIT = 0, TS_OP_COL = 1, TS_OP_IF = 2, TS_OP_OPEN = 3, TS_OP_CLOSE = 4, TS_OP_SEP = 5 };
enum { TS_OPEN_CQL = 0, TS_OPEN_BSON = 1 };

/* column encodings: the CSV value unquoted | a JSON string (quotes included) | its inside |
 * a time column as epoch ns | epoch ms (floor) | ns within that ms (0..999999) | its UTC date
 * YYYY-MM-DD (3 and 4, CQL string literals, are retired: loads bind values, 9..15) */
enum { TS_ENC_RAW = 0, TS_ENC_JSON = 1, TS_ENC_JSONIN = 2,
       TS_ENC_NS = 5, TS_ENC_MS = 6, TS_ENC_SUBMS = 7, TS_ENC_DAY = 8,
/* CQL binary values, each a [bytes] (int32 big-endian length, then the value; a NULL is "unset",
 * length -2): the CSV value unquoted as text | a double | a bigint | a time column as a bigint of
 * epoch ns | a timestamp (epoch ms, floor) | an int of the ns within that ms | a date (days + 2^31) */
       TS_ENC_V_TEXT = 9, TS_ENC_V_DOUBLE = 10, TS_ENC_V_BIGINT = 11, TS_ENC_V_NS = 12, TS_ENC_V_MS = 13,
       TS_ENC_V_SUBMS = 14, TS_ENC_V_DATE = 15,
/* BSON element values (the type byte and name are literals before them): a double | an int64 |
 * a time column as a UTC datetime (epoch ms, floor) | a string (int32 length + 1, bytes, 0) |
 * a time column floored to its UTC hour, as a UTC datetime (MongoDB's bucket layout) */
       TS_ENC_B_DOUBLE = 16, TS_ENC_B_INT64 = 17, TS_ENC_B_DATE = 18, TS_ENC_B_STRING = 19,
       TS_ENC_B_HOUR = 20 };

/* one op: LIT writes lits[lit_off, lit_off + lit_len); COL writes column col encoded as enc;
 * IF skips the next skip ops when column col is NULL (an empty unquoted value); OPEN, CLOSE:
 * above; SEP writes its literal like LIT unless it would come first in a JSON object or array
 * (the line's output so far is empty or ends in '{' or '['): a separator before a member
 * that an IF may have left out of the ones before it */
typedef struct {
    int32_t kind, col, enc, skip;
    uint32_t lit_off, lit_len;
} ts_op;

typedef struct {
    const ts_op *ops;
    int32_t n_ops;
    int32_t max_col;       /* the largest column an op names */
    const char *lits;
} ts_template;

/* scratch: one CSV value as written in the input, quotes included */
typedef struct {
    const char *s, *e;
} ts_span;

/* where a render stands; start from zeros, resume with the same state after TS_ERR_SPACE */
typedef struct {
    uint64_t in_used;      /* input bytes done (whole lines) */
    uint64_t out_used;     /* output bytes written */
    uint64_t lines;        /* lines rendered = entries of ends written */
    uint64_t err_pos;      /* on an error: offset in buf of the line */
    int32_t err_col;       /* TS_ERR_TIME / TS_ERR_COLUMN / TS_ERR_NUMBER: the column */
} ts_render_state;

/* render the CSV lines of buf[0, len) (blank lines skipped) through t into out; ends[i] = end
 * offset in out of line i's text. cols is scratch for cols_cap > t->max_col values. Returns 0
 * when done, TS_ERR_SPACE when out or ends is full (st stops at a line: call again with more
 * room), or another error with st->err_pos (and err_col). */
int32_t ts_render(const ts_template *t, const char *buf, uint64_t len, char *out, uint64_t out_cap,
                  uint64_t *ends, uint64_t ends_cap, ts_span *cols, uint32_t cols_cap, ts_render_state *st);

/* ---- grouping rendered BSON documents by key (phase 2: load, MongoDB's bucket layout) ---- */

/* what ts_bson_groups wrote */
typedef struct {
    uint64_t groups;       /* entries of filter_ends and update_ends */
    uint64_t filter_used;  /* bytes written into filters */
    uint64_t update_used;  /* bytes written into updates */
} ts_groups_out;

/* the uint64_t scratch entries ts_bson_groups needs for n lines (a hash table and four arrays) */
uint64_t ts_bson_groups_scratch(uint64_t n);

/* n lines rendered twice by ts_render: line i's key keys[key_ends[i-1], key_ends[i]) and its
 * element docs[doc_ends[i-1], doc_ends[i]) (key_ends[-1] = doc_ends[-1] = 0), each a BSON
 * document. Lines with equal key bytes form a group: groups in the order of their first line,
 * lines in their order within a group. Per group g: its key copied into filters (end offset
 * filter_ends[g]) and into updates (end offset update_ends[g]) the BSON document
 *     {"$push": {name: {"$each": [element, element, ...]}}}
 * of its lines' elements (array keys "0", "1", ...). filters needs at most key_ends[n-1] bytes,
 * updates at most doc_ends[n-1] + (58 + name_len) * n, the ends n entries each. Returns 0,
 * TS_ERR_SPACE (filters, updates or ends_cap too small), or TS_ERR_ARG (a key or element not
 * framed as a BSON document, a NUL in name, an update over 2^31 - 1 bytes, scratch_cap short). */
int32_t ts_bson_groups(const char *keys, const uint64_t *key_ends, const char *docs, const uint64_t *doc_ends,
                       uint64_t n, const char *name, uint32_t name_len,
                       char *filters, uint64_t filters_cap, uint64_t *filter_ends,
                       char *updates, uint64_t updates_cap, uint64_t *update_ends, uint64_t ends_cap,
                       uint64_t *scratch, uint64_t scratch_cap, ts_groups_out *out);
/* ---- scanning InfluxDB line protocol (import) ------------------------------------------ */

/* field value types; precisions of timestamps */
enum { TS_LP_FLOAT = 0, TS_LP_INT = 1, TS_LP_UINT = 2, TS_LP_STRING = 3, TS_LP_BOOL = 4 };
enum { TS_PREC_NS = 0, TS_PREC_US = 1, TS_PREC_MS = 2, TS_PREC_S = 3 };

/* why a line does not parse (ts_lp_scan.err_code) */
enum { TS_LP_E_MEASUREMENT = 1,   /* no measurement name before the first comma or space */
       TS_LP_E_TAG = 2,           /* a tag without '=', or with an empty key or value */
       TS_LP_E_NO_FIELDS = 3,     /* no field set after the measurement and tags */
       TS_LP_E_FIELD_KEY = 4,     /* a field without '=' or with an empty key */
       TS_LP_E_NO_VALUE = 5,      /* a field with no value */
       TS_LP_E_FLOAT = 6,         /* a value that is no number, string or boolean */
       TS_LP_E_INT = 7,           /* an integer (i) that is not one or is out of range */
       TS_LP_E_UINT = 8,          /* an unsigned integer (u) that is not one or is out of range */
       TS_LP_E_QUOTE = 9,         /* a string value with no closing quote */
       TS_LP_E_AFTER_VALUE = 10,  /* text after a string value before the next comma or space */
       TS_LP_E_TIME = 11 };       /* a timestamp that is not an integer, or out of range in ns */

/* One batch of whole lines scanned into caller-provided arrays. The caller sets the inputs
 * and the arrays (all of them), ts_lp_scan sets the outputs. Spans are offsets in the
 * batch's buffer with lengths, escapes included (a name's text as written); hashes are of
 * the unescaped text (64 bits, 8 bytes a step), so the same name escaped two ways hashes the same. */
typedef struct ts_lp_scan {
    /* inputs */
    int32_t precision;     /* TS_PREC_*: the unit of the file's timestamps; times come out in ns */
    int64_t first_line;    /* file line number (1-based) of the buffer's first line */
    uint64_t cap_points, cap_tags, cap_fields;   /* entries of the per-point, tag, field arrays */
    uint32_t max_errors;   /* entries of the error arrays (errors past them are only counted) */
    /* per point (a line that parsed) */
    int64_t *line;         /* its file line number */
    uint64_t *meas;        /* hash of the measurement */
    uint64_t *series;      /* hash of the series key: the measurement and the tag set, in any
                              order (tags need not be sorted: a sum of per-tag hashes) */
    uint64_t *shape;       /* hash of the measurement and the field keys and types, in order */
    int64_t *time;         /* ns since the epoch (0 when the line has none) */
    uint8_t *has_time;     /* 0: the line has no timestamp */
    uint32_t *meas_off, *meas_len;
    uint32_t *tag_end, *field_end;   /* end index of the point's tags / fields in their arrays */
    /* per tag */
    uint64_t *tag_key, *tag_val;     /* hashes */
    uint32_t *tag_off, *tag_klen, *tag_vlen;   /* key at off, value at off + klen + 1 */
    /* per field */
    uint64_t *field_key;   /* hash */
    uint8_t *field_type;   /* TS_LP_* */
    int64_t *field_value;  /* the bits of a double, int64, uint64; a bool as 0/1; a string: 0 */
    uint32_t *field_off, *field_klen, *field_voff, *field_vlen;  /* key span; value span (a string's
                              inside, between the quotes, escapes included) */
    /* per error */
    int64_t *err_line;
    int32_t *err_code;
    uint32_t *err_col;     /* byte offset in the line where the scan gave up */
    /* outputs */
    uint64_t used;         /* bytes of whole lines scanned (all of len unless TS_ERR_SPACE) */
    uint64_t lines;        /* lines scanned: points + blank + comments + errors */
    uint64_t points, tags, fields, blank, comments, errors;   /* errors: all, collected or not */
} ts_lp_scan;

/* scan the lines of buf[0, len) (len < 4 GiB; a last line without a newline counts; CR before
 * LF is dropped; a line whose first non-blank byte is '#' is a comment). Returns TS_OK when
 * every line was scanned, TS_ERR_SPACE when an array filled up (s->used: the bytes of the
 * whole lines done; scan buf + used next, with first_line + lines), TS_ERR_ARG. */
int32_t ts_lp_scan_lines(ts_lp_scan *s, const char *buf, uint64_t len);

/* each point's series' previous time, in file order: for i < n, prev[i] = last[ids[i]], then
 * last[ids[i]] = time[i] (ids < n_series, checked; last: the caller's per-series state).
 * TS_OK or TS_ERR_ARG */
int32_t ts_lp_prev_times(const int64_t *ids, const int64_t *time, uint64_t n, int64_t *last,
                         uint64_t n_series, int64_t *prev);

/* ---- Prometheus remote-write bodies (phase 2: load) ----------------------------------- */

/* what ts_rw_encode wrote */
typedef struct {
    uint64_t used;         /* bytes of the WriteRequest (on TS_ERR_SPACE: the bytes it needs) */
    uint64_t series;       /* TimeSeries messages */
    uint64_t samples;      /* samples: the scan's field values but its strings */
    uint64_t skipped;      /* string field values (no sample) */
} ts_rw_out;

/* the uint64_t scratch entries ts_rw_encode needs for a scan of n_fields field values */
uint64_t ts_rw_scratch(uint64_t n_fields);

/* the points of s (a ts_lp_scan_lines of buf) as one Prometheus remote-write 1.0 WriteRequest
 * (uncompressed protobuf) in out: one TimeSeries per (measurement, field, tag set), in the
 * order of their first value, labels __name__ = measurement_field and the tags (unescaped;
 * a byte a name may not hold becomes '_'), sorted by name; samples in file order, values as
 * doubles (integers converted, booleans 0/1), times in ms (floor); string values left out;
 * fields as proto3 writes them (a value +0.0 or a time 0 left out: a library's bytes of it).
 * Returns TS_OK, TS_ERR_SPACE (out->used: the bytes needed; call again with that room) or
 * TS_ERR_ARG (scratch_cap < ts_rw_scratch(s->fields), a point of more than 255 tags). */
int32_t ts_rw_encode(const ts_lp_scan *s, const char *buf, char *out, uint64_t cap,
                     uint64_t *scratch, uint64_t scratch_cap, ts_rw_out *res);

/* ---- OpenTelemetry OTLP/HTTP metrics bodies (phase 2: load) --------------------------- */

/* the uint64_t scratch entries ts_otlp_encode needs for a scan of n_fields field values */
uint64_t ts_otlp_scratch(uint64_t n_fields);

/* the points of s (a ts_lp_scan_lines of buf) as one OTLP ExportMetricsServiceRequest
 * (uncompressed protobuf) in out: one ResourceMetrics and ScopeMetrics (no resource, no
 * scope), one gauge Metric per (measurement, tag set, field) in the order of their first
 * value, named measurement_field (unescaped), its NumberDataPoints in file order with the
 * tags as string attributes (unescaped, in the line's order), time_unix_nano in ns, as_double
 * (integers converted, booleans 0/1); string values left out; no series: no bytes. res gets
 * ts_rw_encode's counts (series: Metric messages, samples: data points). Returns TS_OK,
 * TS_ERR_SPACE (res->used: the bytes needed; call again with that room) or TS_ERR_ARG
 * (scratch_cap < ts_otlp_scratch(s->fields)). */
int32_t ts_otlp_encode(const ts_lp_scan *s, const char *buf, char *out, uint64_t cap,
                       uint64_t *scratch, uint64_t scratch_cap, ts_rw_out *res);
/* CDEF END */

#endif
