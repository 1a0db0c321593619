/*
 * media_sniff.c - the media type of bytes from their magic numbers (see media.h).
 *
 * A fetched body's Content-Type and a client's declared type are claims; the decoders act on
 * what the bytes are. Signatures: PNG (89 'PNG' 0D 0A 1A 0A), JPEG (FF D8 FF), GIF ('GIF87a' /
 * 'GIF89a'), WebP ('RIFF' size 'WEBP'), WAV ('RIFF' size 'WAVE'), FLAC ('fLaC'), OGG ('OggS'),
 * MP3 (an 'ID3' tag, or an MPEG audio frame sync: 11 set bits, layer bits not 00).
 */
#include "server/media.h"

#include <string.h>

const char *hearth_media_sniff(const uint8_t *b, size_t n, hearth_media_kind *kind) {
    *kind = HEARTH_MEDIA_IMAGE;
    if (n >= 8 && !memcmp(b, "\x89PNG\r\n\x1a\n", 8)) return "image/png";
    if (n >= 3 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF) return "image/jpeg";
    if (n >= 6 && (!memcmp(b, "GIF87a", 6) || !memcmp(b, "GIF89a", 6))) return "image/gif";
    if (n >= 12 && !memcmp(b, "RIFF", 4) && !memcmp(b + 8, "WEBP", 4)) return "image/webp";
    *kind = HEARTH_MEDIA_AUDIO;
    if (n >= 12 && !memcmp(b, "RIFF", 4) && !memcmp(b + 8, "WAVE", 4)) return "audio/wav";
    if (n >= 4 && !memcmp(b, "fLaC", 4)) return "audio/flac";
    if (n >= 4 && !memcmp(b, "OggS", 4)) return "audio/ogg";
    if (n >= 3 && !memcmp(b, "ID3", 3)) return "audio/mpeg";
    if (n >= 2 && b[0] == 0xFF && (b[1] & 0xE0) == 0xE0 && (b[1] & 0x06) != 0) return "audio/mpeg";
    *kind = HEARTH_MEDIA_FILE;
    return NULL;
}
