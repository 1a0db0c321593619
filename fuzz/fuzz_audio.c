/*
 * fuzz_audio.c - libFuzzer entry point for the audio decoder (server/audio_decode.h:
 * libsndfile from memory, mono mixdown, resampling to 16 kHz).
 *
 * Each input goes to hearth_audio_decode with a 2-second cap. Promises checked: success gives
 * n > 0 samples, no more than 2 s at 16 kHz plus the resampler's rounding; failure gives
 * no buffer and a message.
 *
 * Built like the other targets (fuzz/fuzz.cmake): the test fuzz_audio_replay runs
 * fuzz/corpus/audio in every build. ok_* are copies of tests/golden/media's clips
 * (tools/media_golden.py, soundfile), bad_* cut or altered copies that must be refused.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "server/audio_decode.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define PROMISE(c)                                                                             \
    do {                                                                                       \
        if (!(c)) {                                                                            \
            fprintf(stderr, "fuzz_audio: %s:%d: broken promise: %s\n", __FILE__, __LINE__, #c); \
            abort();                                                                           \
        }                                                                                      \
    } while (0)

static volatile float sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    hearth_audio  a;
    hearth_err    err = {0};
    hearth_status st = hearth_audio_decode(data, size, 2, &a, &err);
    if (st == HEARTH_OK) {
        PROMISE(a.pcm && a.n > 0 && a.n <= 2 * HEARTH_AUDIO_RATE + 1);
        float s = 0; /* read every sample, so ASan sees a short buffer (values are the file's own:
                      * a float WAV may hold anything, NaN included) */
        for (size_t i = 0; i < a.n; i++) s += a.pcm[i];
        sink = s;
    } else {
        PROMISE(a.pcm == NULL && err.code == st && err.msg[0]);
    }
    hearth_audio_fini(&a);
    return 0;
}
