/*
 * fmt_double.h -- shortest round-trip double to positional text (internal).
 */
#ifndef TS_FMT_DOUBLE_H
#define TS_FMT_DOUBLE_H

#include <stddef.h>

/* Upper bound on the length of ts_format_double's output for any double,
   sign included, no NUL (the longest is 327, e.g. -5e-324: "-0.", 323 zeros,
   "5"; the largest finite value takes 309 digits). */
#define TS_DOUBLE_MAX_CHARS 340

/*
 * Writes the text of v into out (no NUL terminator) and returns its length.
 * The digits are the shortest ones that read back as exactly v (the same
 * digits as Python's repr(float)), always in positional notation:
 *   123.0 -> "123", 0.5 -> "0.5", -0.0 -> "-0", 1e22 -> "10000000000000000000000",
 *   1e-7 -> "0.0000001", NaN -> "NaN", +/-inf -> "+Inf" / "-Inf".
 * out must have room for TS_DOUBLE_MAX_CHARS bytes; bytes of that room past
 * the returned length may be overwritten (with junk).
 */
__attribute__((visibility("hidden"))) size_t ts_format_double(double v, char *out);

#endif /* TS_FMT_DOUBLE_H */
