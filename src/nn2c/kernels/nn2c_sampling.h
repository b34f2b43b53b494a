/* GridSample (ONNX GridSample, opsets 16..22), float32, 1 to 3 spatial dimensions.
 *
 * x is [N, C, D0, .., Dr-1] (r = rank, the spatial extent padded in front with unit dims to 3),
 * grid [N, P, r] (P output positions; component k of a grid point addresses spatial axis r-1-k, so
 * (x, y) for a 4-D input), y [N, C, P]. Per grid point and axis d, with size S = D_d and the
 * normalised coordinate g:
 *   align_corners: u = (g + 1) / 2 * (S - 1), borders [0, S - 1]
 *   otherwise:     u = ((g + 1) * S - 1) / 2,  borders [-0.5, S - 0.5]
 *   nearest: u rounded half to even. Outside the borders, padding border clamps u to [0, S - 1]
 *   (not in cubic mode: there only the taps are clamped, as PyTorch and onnxruntime do; the onnx
 *   reference clamps u too), reflection reflects it into the borders.
 *   Taps: nearest one (index trunc(u)), linear two (floor(u), +1; weights 1 - t, t), cubic four
 *   (floor(u) - 1 .. + 2; Keys' weights with A = -0.75 of t = u - floor(u)). A tap index outside
 *   [0, S - 1] reads 0 (zeros), the clamped index (border) or the reflected one (reflection).
 * The result interpolates the last axis first, then outwards, as onnx.reference does.
 * NaN / infinite grid values are taken as far outside the input: no undefined conversion.
 */
#ifndef NN2C_SAMPLING_H
#define NN2C_SAMPLING_H

#include "nn2c_common.h"

typedef struct {
    int32_t batch, channels;
    int32_t rank;            /* spatial dims of x: 1 to 3 */
    int32_t dims[3];         /* spatial sizes, unit-padded in front to 3 */
    int32_t positions;       /* P: output positions per (n, c) */
    int32_t mode;            /* 0 nearest, 1 linear, 2 cubic */
    int32_t padding;         /* 0 zeros, 1 border, 2 reflection */
    int32_t align_corners;
} nn2c_grid_sample_params_t;

void nn2c_grid_sample_f32(const nn2c_grid_sample_params_t *p, const float *x, const float *grid, float *y);

/* ONNX RoiAlign (Mask R-CNN's region pooling), float32: for roi r (x1, y1, x2, y2 in input
 * coordinates times spatial_scale, minus 0.5 with half_pixel) of image batch_indices[r], output
 * [r, c, ph, pw] is the average (or the ONNX-defined max of the weighted corner values) over a
 * grid of bilinear samples in its bin: sampling_ratio per axis, or ceil(roi size / output size)
 * when 0 (limited to the input size + 1, which only a roi far beyond the image reaches). An index
 * outside [0, batch) gives zeros. */
typedef struct {
    int32_t batch, channels, height, width;
    int32_t rois, pooled_h, pooled_w, sampling_ratio;
    int32_t half_pixel, mode_max, index_bytes;
    float spatial_scale;
} nn2c_roi_align_params_t;

void nn2c_roi_align_f32(const nn2c_roi_align_params_t *p, const float *x, const float *rois,
                        const void *batch_indices, float *y);

#endif /* NN2C_SAMPLING_H */
