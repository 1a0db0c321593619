/* mxfp4.c - MXFP4 rows to bf16; see mxfp4.h. */
#include "model/mxfp4.h"
#include "tensor/dtype.h"

#include <math.h>

static const float e2m1[16] = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,  4.0f,  6.0f,
                               -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};

void hearth_mxfp4_row_to_bf16(const uint8_t *blocks, const uint8_t *scales, int64_t n, uint16_t *out) {
    for (int64_t b = 0; b < n / 32; b++) {
        int e = (int)scales[b] - 127;
        for (int j = 0; j < 16; j++) {
            uint8_t byte = blocks[b * 16 + j];
            out[b * 32 + 2 * j] = hearth_fp32_to_bf16(ldexpf(e2m1[byte & 15], e));
            out[b * 32 + 2 * j + 1] = hearth_fp32_to_bf16(ldexpf(e2m1[byte >> 4], e));
        }
    }
}

void hearth_mxfp4_ggml_row_to_bf16(const uint8_t *row, int64_t n, uint16_t *out) {
    for (int64_t b = 0; b < n / 32; b++) {
        const uint8_t *blk = row + b * 17;
        int e = (int)blk[0] - 127;
        for (int j = 0; j < 16; j++) {
            out[b * 32 + j] = hearth_fp32_to_bf16(ldexpf(e2m1[blk[1 + j] & 15], e));
            out[b * 32 + 16 + j] = hearth_fp32_to_bf16(ldexpf(e2m1[blk[1 + j] >> 4], e));
        }
    }
}
