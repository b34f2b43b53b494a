/* nn2c row chains: see nn2c_rows.h. */
#include "nn2c_rows.h"

void nn2c_row_chain(const nn2c_row_stage_t *stages, int32_t n, int32_t block, void *copies, uint8_t *source,
                    int32_t source_row_bytes, uint8_t *sink, int32_t *rows, nn2c_row_call_t call) {
    int32_t *const done = rows, *const first = rows + n, *const need = rows + 2 * n, *const at = rows + 3 * n;
    const nn2c_row_stage_t *const last = &stages[n - 1];
    int32_t bytes = 0;
    for (int32_t j = 0; j < n; ++j) {
        done[j] = 0;
        first[j] = 0;
        at[j] = bytes;
        memcpy((uint8_t *)copies + bytes, stages[j].params, (size_t)stages[j].params_bytes);
        bytes += (int32_t)NN2C_ROW_COPY_BYTES((size_t)stages[j].params_bytes);
    }
    while (done[n - 1] < last->out_rows) { /* (the first iterations fill the windows) */
        /* the rows each member must have made by the end of this iteration: the sink's block, then what the
         * next member's rows read */
        need[n - 1] = NN2C_MIN(last->out_rows, done[n - 1] + block);
        for (int32_t j = n - 2; j >= 0; --j) {
            const nn2c_row_stage_t *const c = &stages[j + 1];
            need[j] = need[j + 1] > 0 ? NN2C_MIN(c->in_rows, (need[j + 1] - 1) * c->stride - c->pad + c->span) : 0;
        }
        for (int32_t j = 0; j < n; ++j) {
            const nn2c_row_stage_t *const s = &stages[j];
            /* at most its step more than it has, and only rows its input already allows */
            int32_t upto = NN2C_MIN(need[j], done[j] + s->step);
            if (j > 0) {
                const int32_t reach = done[j - 1] + s->pad - s->span;
                const int32_t ready = done[j - 1] >= s->in_rows ? s->out_rows
                                      : reach < 0                ? 0
                                                                 : NN2C_MIN(s->out_rows, reach / s->stride + 1);
                upto = NN2C_MIN(upto, ready);
            }
            if (done[j] >= upto) {
                continue;
            }
            uint8_t *out;
            if (j < n - 1) {
                if (upto - first[j] > s->capacity) { /* no room: keep only the rows still read */
                    const nn2c_row_stage_t *const c = &stages[j + 1];
                    const int32_t read = done[j + 1] < c->out_rows ? NN2C_MAX(0, done[j + 1] * c->stride - c->pad)
                                                                   : INT32_MAX;
                    const int32_t low = NN2C_MIN(done[j], read);
                    nn2c_move(s->window, s->window + (low - first[j]) * s->row_bytes,
                              (size_t)(done[j] - low) * (size_t)s->row_bytes);
                    first[j] = low;
                }
                out = s->window + (done[j] - first[j]) * s->row_bytes;
            } else {
                out = sink + done[j] * s->row_bytes;
            }
            const int32_t lo = NN2C_MAX(0, done[j] * s->stride - s->pad);
            const int32_t in_h = NN2C_MIN(s->in_rows, (upto - 1) * s->stride - s->pad + s->span) - lo;
            uint8_t *const in = j > 0 ? stages[j - 1].window + (lo - first[j - 1]) * stages[j - 1].row_bytes
                                      : source + lo * source_row_bytes;
            call(j, (uint8_t *)copies + at[j], in, in_h, upto - done[j], lo - (done[j] * s->stride - s->pad), out);
            done[j] = upto;
        }
    }
}
