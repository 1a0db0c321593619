/*
 * audio_decode.h - audio bytes to 16 kHz mono f32, the input speech encoders (Whisper and
 * its kin) take.
 *
 * Decoding is Debian's libsndfile (1.2: WAV in PCM 8/16/24/32 and float, FLAC, OGG Vorbis /
 * Opus, MP3 through mpg123), reading from memory. Samples come as floats in [-1, 1]
 * (libsndfile's normalisation: PCM divided by 2^(bits-1)); channels are averaged to mono
 * (librosa's to_mono); the rate is converted by resample.h (scipy's resample_poly). A clip
 * longer than max_seconds is refused while decoding, before it is all in memory.
 *
 * Thread rule: any thread; no global state.
 */
#pragma once
#include <stddef.h>

#include "base/status.h"

#define HEARTH_AUDIO_RATE        16000
#define HEARTH_AUDIO_MAX_SECONDS 3600 /* default cap on a clip's length */

typedef struct {
    float *pcm;      /* owned (malloc): mono samples at HEARTH_AUDIO_RATE */
    size_t n;        /* samples */
    int    in_rate;  /* the file's rate, Hz */
    int    channels; /* the file's channels */
} hearth_audio;

/* Decode b[0..n) into out. Errors: HEARTH_E_FORMAT (not audio libsndfile reads, or corrupt),
 * HEARTH_E_LIMIT (longer than max_seconds; 0: HEARTH_AUDIO_MAX_SECONDS), HEARTH_E_NOMEM. */
hearth_status hearth_audio_decode(const void *b, size_t n, int max_seconds, hearth_audio *out, hearth_err *err);
void          hearth_audio_fini(hearth_audio *a);
