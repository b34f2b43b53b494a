/* N-gram counting of token ids (ONNX TfIdfVectorizer); semantics in nn2c's reference/text.py. */
#ifndef NN2C_TEXT_H
#define NN2C_TEXT_H
#include "nn2c_common.h"

/* rows x length int32 tokens -> rows x outputs floats. grams: count x gram_width ids (row g holds
 * sizes[g] of them), indices[g] the output each counts into; weights (NULL: none) per output;
 * mode 0 TF, 1 IDF, 2 TFIDF. The output doubles as the counter. */
typedef struct {
    int32_t rows, length, outputs;
    int32_t count, gram_width;
    int32_t min_gram, max_gram, max_skip, mode;
} nn2c_tfidf_params_t;

void nn2c_tfidf_vectorizer_s32(const nn2c_tfidf_params_t *p, const int32_t *tokens, const int32_t *grams,
                               const int32_t *sizes, const int32_t *indices, const float *weights, float *output);

#endif
