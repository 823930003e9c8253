/* Protocol Buffers wire format: the varints and fixed-width numbers that the
 * encoders of series protocols write (remote_write.c, otlp.c). Caller's buffers only. */
#ifndef TSBENCH_PB_WIRE_H
#define TSBENCH_PB_WIRE_H

#include <stdint.h>

/* bytes of v as a base-128 varint */
static inline unsigned varint_len(uint64_t v)
{
    unsigned n = 1;
    while (v >= 0x80) { v >>= 7; n++; }
    return n;
}

/* v as a varint at o; returns the byte after it */
static inline char *put_varint(char *o, uint64_t v)
{
    while (v >= 0x80) { *o++ = (char)(v | 0x80); v >>= 7; }
    *o++ = (char)v;
    return o;
}

/* v little-endian in 8 bytes at o (fixed64, double); returns the byte after it */
static inline char *put_fixed64(char *o, uint64_t v)
{
    for (int b = 0; b < 8; b++)
        *o++ = (char)(v >> (8 * b));
    return o;
}

#endif
