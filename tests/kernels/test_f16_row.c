/*
 * test_f16_row.c - the KV store's f32 -> f16 row kernels (kernels.h hearth_kernels_f16_row) of
 * every set this CPU runs against hearth_fp32_to_fp16, value for value: random values of every
 * magnitude (f16 subnormals, the overflow edge at 65520, halfway cases that round to even),
 * infinities, signed zeros and NaNs placed in some vectors, odd lengths and offsets.
 */
#include <stdint.h>
#include <string.h>

#include "kernels/kernels.h"
#include "tensor/dtype.h"
#include "test.h"

static uint64_t rng = 0x243f6a8885a308d3ull;
static uint32_t rnd(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 16);
}

static float from_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

TEST(f16_row_equals_scalar) {
    enum { N = 4099 };
    static float x[N];
    static uint16_t want[N], got[N + 1];
    static const float special[] = {0.0f, -0.0f, 65519.0f, 65520.0f, -65520.0f, 65504.0f, 1e-8f, -3e-8f,
                                    5.9604645e-8f, 2.9802322e-8f, 8.940697e-8f, 1.0009766f, 1.00048828125f,
                                    1.00146484375f, INFINITY, -INFINITY, NAN};
    for (int i = 0; i < N; i++) {
        uint32_t r = rnd();
        switch (r % 4) {
        case 0: x[i] = from_bits(rnd() << 1 ^ rnd()); break;                     /* any bits, NaNs too */
        case 1: /* 2^-25 .. 2^-6: f16 subnormals and the smallest normals */
            x[i] = from_bits((0x33000000u + (rnd() % 0x0c800000u)) | (r & 0x80000000u));
            break;
        case 2: x[i] = from_bits(0x3f800000u + ((rnd() % 1024u) << 13) + 0x1000u); break; /* halfway */
        default: x[i] = special[rnd() % (sizeof special / sizeof special[0])];
        }
    }
    for (int i = 0; i < N; i++) want[i] = hearth_fp32_to_fp16(x[i]);
    int compared = 0;
    for (int isa = HEARTH_ISA_REF; isa < HEARTH_ISA_COUNT; isa++) {
        hearth_f16_row_fn fn = hearth_kernels_f16_row_isa((hearth_isa)isa);
        if (!fn) continue;
        for (int64_t off = 0; off < 3; off++)
            for (int64_t n = 0; n + off <= N; n = n * 2 + 7) {
                memset(got, 0xab, sizeof got);
                fn(x + off, got + off, n);
                int bad = 0;
                for (int64_t i = 0; i < n; i++) bad += got[off + i] != want[off + i];
                bad += got[off + n] != 0xabab; /* nothing past the row */
                if (bad) fprintf(stderr, "  %s n %lld off %lld: %d differ\n", hearth_isa_name((hearth_isa)isa),
                                 (long long)n, (long long)off, bad);
                CHECK_EQ(bad, 0);
                compared++;
            }
    }
    CHECK(compared > 0);
}

int main(int argc, char **argv) { return test_main(argc, argv); }
