/* Scaled dot-product attention, float32; see nn2c_attention.h for the arithmetic. */
#include "nn2c_attention.h"

#include <math.h>
#include <string.h>

/* Is key j visible from query position pos (= i + causal_offset) under the causal / window rules? */
static int nn2c_attention_visible(const nn2c_attention_params_t *p, int32_t pos, int32_t j) {
    const int32_t diff = pos - j;
    if (p->causal && diff < 0) {
        return 0;
    }
    if (p->left_window >= 0 && diff > p->left_window) {
        return 0;
    }
    if (p->right_window >= 0 && -diff > p->right_window) {
        return 0;
    }
    return 1;
}

/* row[j] = the additive bias of every key; returns whether any key is not -inf (attendable). */
static int nn2c_attention_bias(const nn2c_attention_params_t *p, const float *mask_f, const uint8_t *mask_b,
                               int32_t mask_offset, int32_t pos, int32_t valid, float *row) {
    int open = 0;
    for (int32_t j = 0; j < p->kv_len; ++j) {
        float bias = -INFINITY;
        if (j < valid && nn2c_attention_visible(p, pos, j)) {
            if (mask_f != NULL) {
                bias = j < p->mask_len ? mask_f[mask_offset + j] : -INFINITY;
            } else if (mask_b != NULL) {
                bias = (j < p->mask_len && mask_b[mask_offset + j]) ? 0.0f : -INFINITY;
            } else {
                bias = 0.0f;
            }
        }
        row[j] = bias;
        open |= !(bias == -INFINITY); /* a NaN bias counts as open, as in numpy's max */
    }
    return open;
}

/* In place: row = softmax(row); a row whose maximum is -inf (or whose sum is 0) becomes 0. */
static void nn2c_attention_softmax(float *row, int32_t n) {
    float top = -INFINITY;
    for (int32_t j = 0; j < n; ++j) {
        if (row[j] > top) {
            top = row[j];
        }
    }
    if (top == -INFINITY) {
        top = 0.0f;
    }
    float sum = 0.0f;
    for (int32_t j = 0; j < n; ++j) {
        row[j] = expf(row[j] - top);
        sum += row[j];
    }
    if (sum == 0.0f) {
        sum = 1.0f;
    }
    for (int32_t j = 0; j < n; ++j) {
        row[j] = row[j] / sum;
    }
}

static float nn2c_attention_dot(const float *a, const float *b, int32_t n) {
    float total = 0.0f;
    for (int32_t d = 0; d < n; ++d) {
        total += a[d] * b[d];
    }
    return total;
}

/* The valid key count of batch b (nonpad_kv_seqlen), kept within +-2^30 so that positions stay in int32. */
static int32_t nn2c_attention_valid(const nn2c_attention_params_t *p, const void *nonpad, int32_t b) {
    const int64_t n = nn2c_read_index(nonpad, (size_t)b, p->nonpad_bytes);
    const int64_t limit = (int64_t)1 << 30;
    return (int32_t)(n < -limit ? -limit : (n > limit ? limit : n));
}

void nn2c_attention_f32(const nn2c_attention_params_t *p, const float *q, const float *k, const float *v,
                        const float *mask_f, const uint8_t *mask_b, const void *nonpad, float *y, float *qk,
                        float *row) {
    for (int32_t b = 0; b < p->batch; ++b) {
        const int32_t valid = nonpad != NULL ? nn2c_attention_valid(p, nonpad, b) : p->kv_len;
        const int32_t offset = nonpad != NULL ? valid - p->q_len : p->causal_offset;
        for (int32_t h = 0; h < p->q_heads; ++h) {
            const int32_t kvh = h / p->kv_group;
            const float *kh = k + b * p->k_stride[0] + kvh * p->k_stride[1];
            const float *vh = v + b * p->v_stride[0] + kvh * p->v_stride[1];
            for (int32_t i = 0; i < p->q_len; ++i) {
                const float *qi = q + b * p->q_stride[0] + h * p->q_stride[1] + i * p->q_stride[2];
                float *yi = y + b * p->y_stride[0] + h * p->y_stride[1] + i * p->y_stride[2];
                float *qki = qk == NULL ? NULL : qk + (((b * p->q_heads) + h) * p->q_len + i) * p->kv_len;
                const int32_t mask_offset = b * p->mask_stride[0] + h * p->mask_stride[1] + i * p->mask_stride[2];
                const int open = nn2c_attention_bias(p, mask_f, mask_b, mask_offset, i + offset, valid, row);
                for (int32_t j = 0; j < p->kv_len; ++j) {
                    float logit = nn2c_attention_dot(qi, kh + j * p->k_stride[2], p->head_dim) * p->scale;
                    if (p->softcap > 0.0f) {
                        logit = p->softcap * tanhf(logit / p->softcap);
                    }
                    if (qki != NULL && p->qk_mode < 2) {
                        qki[j] = logit;
                    }
                    row[j] += logit;
                    if (qki != NULL && p->qk_mode == 2) {
                        qki[j] = row[j];
                    }
                }
                if (open) {
                    nn2c_attention_softmax(row, p->kv_len);
                } else {
                    for (int32_t j = 0; j < p->kv_len; ++j) {
                        row[j] = 0.0f; /* no attendable key: Y = 0 (0 * V, as the reference's matmul) */
                    }
                }
                if (qki != NULL && p->qk_mode == 3) {
                    for (int32_t j = 0; j < p->kv_len; ++j) {
                        qki[j] = row[j];
                    }
                }
                for (int32_t d = 0; d < p->v_dim; ++d) {
                    yi[d] = 0.0f;
                }
                for (int32_t j = 0; j < p->kv_len; ++j) {
                    const float *vj = vh + j * p->v_stride[2];
                    for (int32_t d = 0; d < p->v_dim; ++d) {
                        yi[d] += row[j] * vj[d];
                    }
                }
            }
        }
    }
}

void nn2c_rotary_embedding_f32(const nn2c_rotary_params_t *p, const float *x, const float *cos_cache,
                               const float *sin_cache, float *y) {
    const int32_t half = p->rotary_dim / 2;
    const int32_t second = p->interleaved ? 1 : half; /* offset of x2 from x1 */
    const int32_t step = p->interleaved ? 2 : 1;      /* distance between consecutive x1 */
    for (int32_t b = 0; b < p->batch; ++b) {
        for (int32_t h = 0; h < p->heads; ++h) {
            for (int32_t s = 0; s < p->rows; ++s) {
                const int32_t offset = b * p->x_stride[0] + h * p->x_stride[1] + s * p->x_stride[2];
                const float *xi = x + offset;
                float *yi = y + offset;
                const float *c = cos_cache + b * p->cache_batch_stride + s * half;
                const float *sn = sin_cache + b * p->cache_batch_stride + s * half;
                for (int32_t i = 0; i < half; ++i) {
                    const float x1 = xi[i * step], x2 = xi[i * step + second];
                    yi[i * step] = c[i] * x1 - sn[i] * x2;
                    yi[i * step + second] = sn[i] * x1 + c[i] * x2;
                }
                for (int32_t d = p->rotary_dim; d < p->head_dim; ++d) {
                    yi[d] = xi[d];
                }
            }
        }
    }
}

/* ---- LinearAttention --------------------------------------------------------------------------- */

void nn2c_linear_attention_f32(const nn2c_linear_attention_params_t *p, const float *q, const float *k,
                               const float *v, const float *past, const float *decay, const float *beta,
                               float *output, float *present, void *work) {
    const int32_t dk = p->dk, dv = p->dv, hkv = p->kv_heads, hq = p->q_heads;
    const int32_t group = hq / hkv;
    const int gated = p->rule == 1 || p->rule == 3, delta = p->rule >= 2;
    const size_t state_size = (size_t)p->batch * (size_t)hkv * (size_t)dk * (size_t)dv;
    float *update = (float *)work;
    for (size_t i = 0; i < state_size; ++i) {
        present[i] = past != NULL ? past[i] : 0.0f;
    }
    for (int32_t t = 0; t < p->steps; ++t) {
        for (int32_t b = 0; b < p->batch; ++b) {
            const size_t token = (size_t)b * (size_t)p->steps + (size_t)t;
            for (int32_t h = 0; h < hkv; ++h) {
                float *s = present + (((size_t)b * (size_t)hkv + (size_t)h) * (size_t)dk) * (size_t)dv;
                const float *kt = k + (token * (size_t)hkv + (size_t)h) * (size_t)dk;
                const float *vt = v + (token * (size_t)hkv + (size_t)h) * (size_t)dv;
                if (gated) {
                    for (int32_t d = 0; d < dk; ++d) {
                        const size_t g = p->decay_per_key ? (token * (size_t)hkv + (size_t)h) * (size_t)dk + (size_t)d
                                                          : token * (size_t)hkv + (size_t)h;
                        const float factor = expf(decay[g]);
                        for (int32_t m = 0; m < dv; ++m) {
                            s[(size_t)d * (size_t)dv + (size_t)m] *= factor;
                        }
                    }
                }
                for (int32_t m = 0; m < dv; ++m) {
                    update[m] = vt[m];
                }
                if (delta) {
                    const float bt = beta[token * (size_t)p->beta_heads + (size_t)(p->beta_heads == 1 ? 0 : h)];
                    for (int32_t m = 0; m < dv; ++m) {
                        float retrieved = 0.0f;
                        for (int32_t d = 0; d < dk; ++d) {
                            retrieved += s[(size_t)d * (size_t)dv + (size_t)m] * kt[d];
                        }
                        update[m] = bt * (vt[m] - retrieved);
                    }
                }
                for (int32_t d = 0; d < dk; ++d) {
                    for (int32_t m = 0; m < dv; ++m) {
                        s[(size_t)d * (size_t)dv + (size_t)m] += kt[d] * update[m];
                    }
                }
            }
            for (int32_t h = 0; h < hq; ++h) {
                const float *s = present + (((size_t)b * (size_t)hkv + (size_t)(h / group)) * (size_t)dk) * (size_t)dv;
                const float *qt = q + (token * (size_t)hq + (size_t)h) * (size_t)dk;
                float *o = output + (token * (size_t)hq + (size_t)h) * (size_t)dv;
                for (int32_t m = 0; m < dv; ++m) {
                    float acc = 0.0f;
                    for (int32_t d = 0; d < dk; ++d) {
                        acc += qt[d] * s[(size_t)d * (size_t)dv + (size_t)m];
                    }
                    o[m] = p->scale * acc;
                }
            }
        }
    }
}
