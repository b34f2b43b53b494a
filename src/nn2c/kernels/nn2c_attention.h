/* Scaled dot-product attention (ONNX Attention, opsets 23..25), float32, one fused pass per query row.
 *
 * For batch b, query head h (key / value head h / kv_group), query row i and key j:
 *   bias[j]  = mask(b, h, i, j)  (float mask: its value; bool mask: 0 if set else -inf;
 *                                 -inf for j >= mask_len, the mask's last dimension)
 *              -inf also where j is outside the causal / window band around pos = i + causal_offset
 *   logit[j] = softcap(scale * sum_d q[i, d] k[j, d])   (c * tanhf(x / c) when softcap c > 0)
 *   p        = softmax(logit + bias) (max-subtracted, expf); p = 0 when every bias[j] is -inf
 *   y[i, :]  = sum_j p[j] v[j, :]
 * Tensors are addressed by element strides of (batch, head, row) with unit stride along the last
 * (feature) axis, so both [B, H, S, D] and [B, S, H * D] layouts are read without a transpose.
 * qk (optional, contiguous [B, Hq, Sq, Skv]): mode 0 / 1 the logits, 2 logits + bias, 3 p.
 * `row` is a scratch buffer of kv_len floats (the biases, then the logits, then p).
 */
#ifndef NN2C_ATTENTION_H
#define NN2C_ATTENTION_H

#include "nn2c_common.h"

typedef struct {
    int32_t batch, q_heads, kv_group;        /* kv head = h / kv_group */
    int32_t q_len, kv_len, head_dim, v_dim;
    int32_t q_stride[3], k_stride[3], v_stride[3], y_stride[3]; /* batch, head, row */
    int32_t mask_stride[3];                  /* batch, head, row (0 where broadcast) */
    int32_t mask_len;                        /* keys j >= mask_len are masked */
    int32_t causal, causal_offset;
    int32_t left_window, right_window;       /* -1: unbounded */
    int32_t qk_mode;
    float scale, softcap;                    /* softcap 0: none */
    int32_t nonpad_bytes;                    /* 4 or 8: nonpad_kv_seqlen is int32 / int64 */
} nn2c_attention_params_t;

/* nonpad (may be NULL): ONNX nonpad_kv_seqlen, the count n[b] of valid keys per batch; keys j >= n[b]
 * are masked and the causal / window position of query row i is i + n[b] - q_len. */
void nn2c_attention_f32(const nn2c_attention_params_t *p, const float *q, const float *k, const float *v,
                        const float *mask_f, const uint8_t *mask_b, const void *nonpad, float *y, float *qk,
                        float *row);

/* RotaryEmbedding: per (batch, head, row) of x (strides as above, same for the output), with
 * c = cos[b, row, i], s = sin[b, row, i] (cos / sin contiguous [B or 1, S, rotary_dim / 2]; batch
 * stride 0 when shared) and the pair (x1, x2) = (x[i], x[i + R/2]) or, interleaved, (x[2i], x[2i+1]):
 * y1 = c x1 - s x2, y2 = s x1 + c x2; features from rotary_dim on are copied. */
typedef struct {
    int32_t batch, heads, rows, head_dim, rotary_dim, interleaved;
    int32_t x_stride[3];     /* batch, head, row */
    int32_t cache_batch_stride;
} nn2c_rotary_params_t;

void nn2c_rotary_embedding_f32(const nn2c_rotary_params_t *p, const float *x, const float *cos_cache,
                               const float *sin_cache, float *y);

/* ONNX LinearAttention: the recurrence of nn2c's reference/attention.py, token by token. rule: 0
 * linear, 1 gated, 2 delta, 3 gated_delta; decay_per_key: decay has Hkv * dk values per token
 * (else Hkv); beta_heads: Hkv or 1. The state is kept in `present` (copied from past, or zeros);
 * `work` is scratch for dv floats. */
typedef struct {
    int32_t batch, steps, q_heads, kv_heads, dk, dv;
    int32_t rule, decay_per_key, beta_heads;
    float scale;
} nn2c_linear_attention_params_t;

void nn2c_linear_attention_f32(const nn2c_linear_attention_params_t *p, const float *q, const float *k,
                               const float *v, const float *past, const float *decay, const float *beta,
                               float *output, float *present, void *work);

#endif /* NN2C_ATTENTION_H */
