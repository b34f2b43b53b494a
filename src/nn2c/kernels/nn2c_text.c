/* N-gram counting of token ids (see nn2c_text.h). */
#include "nn2c_text.h"

static int nn2c_gram_matches(const int32_t *row, int32_t start, int32_t skip, const int32_t *gram, int32_t n) {
    for (int32_t k = 0; k < n; ++k) {
        if (row[start + k * skip] != gram[k]) {
            return 0;
        }
    }
    return 1;
}

void nn2c_tfidf_vectorizer_s32(const nn2c_tfidf_params_t *p, const int32_t *tokens, const int32_t *grams,
                               const int32_t *sizes, const int32_t *indices, const float *weights, float *output) {
    for (int32_t r = 0; r < p->rows; ++r) {
        const int32_t *row = tokens + (size_t)r * (size_t)p->length;
        float *y = output + (size_t)r * (size_t)p->outputs;
        int32_t smallest = p->min_gram;
        for (int32_t o = 0; o < p->outputs; ++o) {
            y[o] = 0.0f;
        }
        for (int32_t skip = 1; skip <= p->max_skip + 1; ++skip) {
            for (int32_t start = 0; start < p->length; ++start) {
                for (int32_t g = 0; g < p->count; ++g) {
                    const int32_t n = sizes[g];
                    /* in int64: (n - 1) * skip may pass INT32_MAX for absurd attributes */
                    const int64_t last = (int64_t)start + (int64_t)(n - 1) * (int64_t)skip;
                    if (n >= smallest && n <= p->max_gram && last < (int64_t)p->length &&
                        nn2c_gram_matches(row, start, skip, grams + (size_t)g * (size_t)p->gram_width, n)) {
                        y[indices[g]] += 1.0f;
                    }
                }
            }
            if (smallest == 1) {
                smallest = 2;
                if (smallest > p->max_gram) {
                    break;
                }
            }
        }
        for (int32_t o = 0; o < p->outputs; ++o) {
            const float w = weights != NULL ? weights[o] : 1.0f;
            if (p->mode == 1) {
                y[o] = y[o] > 0.0f ? w : 0.0f;
            } else if (p->mode == 2) {
                y[o] = w * y[o];
            }
        }
    }
}
