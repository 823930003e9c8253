/* Grouping rendered BSON by key (phase 2: load, MongoDB's bucket layout): the
 * lines of one split CSV part, each rendered twice by ts_render (its key: a
 * filter document such as {"tags": {...}, "hour": <date>}; its element: a
 * document such as {"time": <date>, <field>: <value>, ...}), become one filter
 * and one update document per distinct key:
 *
 *     {"$push": {<name>: {"$each": [<element>, <element>, ...]}}}
 *
 * (a BSON array is a document whose keys are "0", "1", ...). Groups come in
 * the order of their first line, lines in their order within a group. No
 * globals, no allocation: a hash table and the per-line and per-group arrays
 * live in the caller's scratch space. */

#include <string.h>

#include "tsbench.h"
#include "fmt_int.h"

/* bytes an update adds around its elements: the three documents and the array's lengths,
 * type bytes, names ("$push", name, "$each") and final zeros */
#define GROUP_OVERHEAD 36u

static uint64_t table_size(uint64_t n)
{
    uint64_t t = 8;
    while (t < 2 * n)
        t <<= 1;
    return t;
}

/* more lines than any memory holds: below it the sizes here fit 64 bits */
#define MAX_LINES ((uint64_t)1 << 56)

uint64_t ts_bson_groups_scratch(uint64_t n)
{
    return n > MAX_LINES ? UINT64_MAX : table_size(n) + 4 * n;
}

static uint32_t le32(const char *p)
{
    const unsigned char *u = (const unsigned char *)p;
    return (uint32_t)u[0] | (uint32_t)u[1] << 8 | (uint32_t)u[2] << 16 | (uint32_t)u[3] << 24;
}

static char *put_le32(char *o, uint32_t v)
{
    for (int i = 0; i < 4; i++, v >>= 8)
        o[i] = (char)(v & 0xff);
    return o + 4;
}

/* whether [s, s + len) is a BSON document by its framing: its length first, a 0 last */
static int is_document(const char *s, uint64_t len)
{
    return len >= 5 && len <= INT32_MAX && le32(s) == len && s[len - 1] == 0;
}

/* a 64-bit hash of a key, 8 bytes at a time */
static uint64_t hash_key(const char *s, uint64_t len)
{
    uint64_t h = 0x9e3779b97f4a7c15u ^ len;
    for (; len >= 8; s += 8, len -= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdu;
        h ^= h >> 32;
    }
    uint64_t w = 0;
    memcpy(&w, s, len);
    h = (h ^ w) * 0xc4ceb9fe1a85ec53u;
    return h ^ (h >> 29);
}

int32_t ts_bson_groups(const char *keys, const uint64_t *key_ends, const char *docs, const uint64_t *doc_ends,
                       uint64_t n, const char *name, uint32_t name_len,
                       char *filters, uint64_t filters_cap, uint64_t *filter_ends,
                       char *updates, uint64_t updates_cap, uint64_t *update_ends, uint64_t ends_cap,
                       uint64_t *scratch, uint64_t scratch_cap, ts_groups_out *out)
{
    if (!out || n > MAX_LINES || (n && (!keys || !key_ends || !docs || !doc_ends || !scratch)) || !name ||
        memchr(name, 0, name_len) || name_len > 1024 || scratch_cap < ts_bson_groups_scratch(n))
        return TS_ERR_ARG;
    memset(out, 0, sizeof *out);
    uint64_t tsize = table_size(n), mask = tsize - 1;
    uint64_t *table = scratch;              /* group + 1 per slot, 0: empty */
    uint64_t *line_group = table + tsize;   /* per line */
    uint64_t *first = line_group + n;       /* per group: its first line (its key) */
    uint64_t *end = first + n;              /* per group: its line count, then its end in order */
    uint64_t *order = end + n;              /* the lines group after group */
    memset(table, 0, tsize * sizeof *table);

    /* groups, in the order of their first line */
    uint64_t groups = 0;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t ks = i ? key_ends[i - 1] : 0, ds = i ? doc_ends[i - 1] : 0;
        if (key_ends[i] < ks || doc_ends[i] < ds || !is_document(keys + ks, key_ends[i] - ks) ||
            !is_document(docs + ds, doc_ends[i] - ds))
            return TS_ERR_ARG;
        uint64_t klen = key_ends[i] - ks, slot = hash_key(keys + ks, klen) & mask, g;
        for (;; slot = (slot + 1) & mask) {
            if (table[slot] == 0) {
                g = groups++;
                table[slot] = g + 1;
                first[g] = i;
                end[g] = 0;
                break;
            }
            g = table[slot] - 1;
            uint64_t f = first[g], fs = f ? key_ends[f - 1] : 0;
            if (key_ends[f] - fs == klen && memcmp(keys + fs, keys + ks, klen) == 0)
                break;
        }
        line_group[i] = g;
        end[g]++;
    }
    if (groups > ends_cap)
        return TS_ERR_SPACE;

    /* the lines in group order (a counting sort, stable): end[g] becomes the end of g's lines */
    uint64_t sum = 0;
    for (uint64_t g = 0; g < groups; g++) {
        uint64_t c = end[g];
        end[g] = sum;
        sum += c;
    }
    for (uint64_t i = 0; i < n; i++)
        order[end[line_group[i]]++] = i;

    /* per group: its filter, its update */
    char *f = filters, *u = updates;
    for (uint64_t g = 0, k = 0; g < groups; g++) {
        uint64_t ks = first[g] ? key_ends[first[g] - 1] : 0, klen = key_ends[first[g]] - ks;
        if ((uint64_t)(filters + filters_cap - f) < klen)
            return TS_ERR_SPACE;
        memcpy(f, keys + ks, klen);
        f += klen;
        filter_ends[g] = (uint64_t)(f - filters);

        uint64_t room = (uint64_t)(updates + updates_cap - u), need = GROUP_OVERHEAD + name_len;
        for (uint64_t j = k; j < end[g]; j++) {
            uint64_t i = order[j], ds = i ? doc_ends[i - 1] : 0;
            need += 2 + (uint64_t)ts_count_digits(j - k) + (doc_ends[i] - ds);
        }
        if (need > INT32_MAX)
            return TS_ERR_ARG;              /* no BSON document is that long */
        if (room < need)
            return TS_ERR_SPACE;
        char *doc = u, *push, *named, *each;
        u += 4;
        *u++ = 0x03;
        memcpy(u, "$push", 6);
        u += 6;
        push = u;
        u += 4;
        *u++ = 0x03;
        memcpy(u, name, name_len);
        u += name_len;
        *u++ = 0;
        named = u;
        u += 4;
        *u++ = 0x04;
        memcpy(u, "$each", 6);
        u += 6;
        each = u;
        u += 4;
        for (uint64_t j = k; j < end[g]; j++) {
            uint64_t i = order[j], ds = i ? doc_ends[i - 1] : 0;
            *u++ = 0x03;
            u += ts_fmt_u64(j - k, u);
            *u++ = 0;
            memcpy(u, docs + ds, doc_ends[i] - ds);
            u += doc_ends[i] - ds;
        }
        *u++ = 0;
        put_le32(each, (uint32_t)(u - each));
        *u++ = 0;
        put_le32(named, (uint32_t)(u - named));
        *u++ = 0;
        put_le32(push, (uint32_t)(u - push));
        *u++ = 0;
        put_le32(doc, (uint32_t)(u - doc));
        update_ends[g] = (uint64_t)(u - updates);
        k = end[g];
    }
    out->groups = groups;
    out->filter_used = (uint64_t)(f - filters);
    out->update_used = (uint64_t)(u - updates);
    return TS_OK;
}
