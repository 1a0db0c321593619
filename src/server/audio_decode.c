/*
 * audio_decode.c - audio bytes -> 16 kHz mono f32 (see audio_decode.h).
 *
 * libsndfile reads through SF_VIRTUAL_IO over the caller's bytes (no temporary file). Frames
 * are read in blocks of 4096, averaged to mono as they come, and appended to a growing buffer
 * whose length is checked against the cap on every block, so a stream that lies about its
 * length (or has none, as MP3 may) still cannot run past it. The mono signal is then resampled
 * once, whole: resample_poly's output depends on the whole signal, not on block boundaries.
 */
#include "server/audio_decode.h"
#include "base/buf.h"
#include "server/resample.h"

#include <sndfile.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const unsigned char *b;
    sf_count_t           n, pos;
} mem_file;

static sf_count_t vio_len(void *ud) { return ((mem_file *)ud)->n; }

static sf_count_t vio_seek(sf_count_t off, int whence, void *ud) {
    mem_file  *f = ud;
    sf_count_t p = whence == SEEK_SET ? off : whence == SEEK_CUR ? f->pos + off : f->n + off;
    if (p < 0 || p > f->n) return -1;
    return f->pos = p;
}

static sf_count_t vio_read(void *dst, sf_count_t count, void *ud) {
    mem_file *f = ud;
    if (count > f->n - f->pos) count = f->n - f->pos;
    if (count <= 0) return 0;
    memcpy(dst, f->b + f->pos, (size_t)count);
    f->pos += count;
    return count;
}

static sf_count_t vio_write(const void *src, sf_count_t count, void *ud) {
    (void)src, (void)count, (void)ud;
    return 0;
}

static sf_count_t vio_tell(void *ud) { return ((mem_file *)ud)->pos; }

void hearth_audio_fini(hearth_audio *a) {
    if (!a) return;
    free(a->pcm);
    *a = (hearth_audio){0};
}

hearth_status hearth_audio_decode(const void *b, size_t n, int max_seconds, hearth_audio *out, hearth_err *err) {
    *out = (hearth_audio){0};
    if (max_seconds <= 0) max_seconds = HEARTH_AUDIO_MAX_SECONDS;
    SF_VIRTUAL_IO vio = {vio_len, vio_seek, vio_read, vio_write, vio_tell};
    mem_file      f = {b, (sf_count_t)n, 0};
    SF_INFO       info;
    memset(&info, 0, sizeof info);
    SNDFILE *sf = sf_open_virtual(&vio, SFM_READ, &info, &f);
    if (!sf) return hearth_err_set(err, HEARTH_E_FORMAT, 0, "not audio hearth can decode: %s", sf_strerror(NULL));
    hearth_status st = HEARTH_OK;
    float        *block = NULL, *mono = NULL;
    size_t        n_mono = 0, cap = 0;
    if (info.channels < 1 || info.channels > 64 || info.samplerate < 1 || info.samplerate > 1000000) {
        st = hearth_err_set(err, HEARTH_E_FORMAT, 0, "audio with %d channels at %d Hz", info.channels, info.samplerate);
        goto out;
    }
    size_t max_frames = (size_t)max_seconds * (size_t)info.samplerate;
    enum { BLOCK = 4096 };
    block = malloc(sizeof *block * BLOCK * (size_t)info.channels);
    if (!block) goto oom;
    for (;;) {
        sf_count_t got = sf_readf_float(sf, block, BLOCK);
        if (got <= 0) break;
        if (n_mono + (size_t)got > max_frames) {
            st = hearth_err_set(err, HEARTH_E_LIMIT, 0, "the audio is longer than %d s", max_seconds);
            goto out;
        }
        if (!hearth_buf_grow(&mono, &cap, n_mono + (size_t)got, sizeof *mono, BLOCK)) goto oom;
        for (sf_count_t i = 0; i < got; i++) {
            double s = 0;
            for (int c = 0; c < info.channels; c++) s += block[i * info.channels + c];
            mono[n_mono++] = (float)(s / info.channels);
        }
    }
    if (sf_error(sf) != SF_ERR_NO_ERROR) {
        st = hearth_err_set(err, HEARTH_E_FORMAT, 0, "corrupt audio: %s", sf_strerror(sf));
        goto out;
    }
    if (n_mono == 0) {
        st = hearth_err_set(err, HEARTH_E_FORMAT, 0, "the audio holds no samples");
        goto out;
    }
    out->n = hearth_resample_len(n_mono, info.samplerate, HEARTH_AUDIO_RATE);
    out->pcm = malloc(sizeof *out->pcm * out->n);
    if (!out->pcm) goto oom;
    if ((st = hearth_resample(mono, n_mono, info.samplerate, HEARTH_AUDIO_RATE, out->pcm)) != HEARTH_OK) {
        hearth_err_set(err, st, 0, "cannot resample audio at %d Hz", info.samplerate);
        goto out;
    }
    out->in_rate = info.samplerate;
    out->channels = info.channels;
    goto out;
oom:
    st = hearth_err_set(err, HEARTH_E_NOMEM, 0, "out of memory decoding audio");
out:
    if (st != HEARTH_OK) hearth_audio_fini(out);
    free(mono);
    free(block);
    sf_close(sf);
    return st;
}
