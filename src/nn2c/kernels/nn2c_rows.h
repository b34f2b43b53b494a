/* nn2c row chains: the loop of a row group (codegen/stream.py) whose operators each read the one before,
 * run from a table instead of written out per group.
 *
 * A row group runs several operators together, one output row (or `block` rows) of its last operator per
 * iteration; every earlier member keeps a window of consecutive rows of its output (memory/rows.py). In a
 * chain, member 0 reads a whole tensor from outside the group, member j > 0 reads member j - 1's window,
 * and only member j + 1 reads member j. Each member's row map: its output row q reads input rows
 * [q * stride - pad, q * stride - pad + span), clipped to [0, in_rows).
 *
 * nn2c_row_chain runs exactly the iterations of the written-out loop (the same calls, rows and window
 * slides); the calls go through `call`, the model's own function that sets the member's row geometry in a
 * copy of its parameter struct and calls its kernel. One copy of the loop serves every chain of a model
 * (person_detect's three chains of 13 members written out took 3,608 B of its Cortex-M4 invoke).
 */
#ifndef NN2C_ROWS_H
#define NN2C_ROWS_H

#include "nn2c_conv.h" /* nn2c_dim_t: the row counts are as wide as the model's convolution geometry */

typedef struct {
    const void *params; /* its parameter struct, copied once per group: the calls set its rows in the copy */
    uint8_t *window;    /* its output rows (NULL for the last member: the group's output tensor) */
    int32_t row_bytes;  /* bytes of one output row */
    nn2c_dim_t params_bytes; /* sizeof its parameter struct */
    nn2c_dim_t capacity;     /* rows the window holds */
    nn2c_dim_t out_rows;     /* rows of its whole output */
    nn2c_dim_t step;         /* rows made per iteration at most */
    nn2c_dim_t in_rows, span, stride, pad; /* its row map over its input */
} nn2c_row_stage_t;

/* run member `stage` on input rows starting at `in` (in_h rows, pad_h rows of padding above them), making
 * out_h rows at `out`; params: the member's copy of its parameter struct, whose row fields the call sets */
typedef void (*nn2c_row_call_t)(int32_t stage, void *params, void *in, int32_t in_h, int32_t out_h, int32_t pad_h,
                                void *out);

/* Bytes of the members' parameter copies: each struct's size rounded up to 8 (their alignment), summed. */
#define NN2C_ROW_COPY_BYTES(size) (((size) + 7u) & ~(size_t)7u)

/* n members (n >= 2); copies: room for their parameter copies (NN2C_ROW_COPY_BYTES of each), 8-byte aligned;
 * source: the outside tensor member 0 reads (source_row_bytes a row); sink: the last member's output; rows: 4 n
 * int32 of workspace (rows done, first row of the window, rows needed, where its copy is). */
void nn2c_row_chain(const nn2c_row_stage_t *stages, int32_t n, int32_t block, void *copies, uint8_t *source,
                    int32_t source_row_bytes, uint8_t *sink, int32_t *rows, nn2c_row_call_t call);

#endif /* NN2C_ROWS_H */
