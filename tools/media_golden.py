#!/usr/bin/env python3
"""media_golden.py - goldens for hearth's image and audio decoders (tests/unit/test_media_decode.c).

Images: small pictures drawn with numpy (a colour gradient with a seeded noise pattern, so every
pixel differs) are saved by Pillow as PNG (RGB, RGBA, palette, grey), JPEG (colour 4:2:0,
grey) and WebP (lossless, lossy); the reference pixels are Pillow's
Image.open(file).convert("RGB") of each file, written as raw [h][w][3] bytes (NAME.rgb).

Audio: a seeded signal (three sines and noise, |x| < 0.9) is written by python-soundfile
(libsndfile) as WAV PCM 16 / 24 / 32 and float, FLAC and MP3 at several rates and channel
counts; the reference is soundfile.read(file, dtype="float64") averaged over channels and
resampled to 16 kHz by scipy.signal.resample_poly(x, up, down) (its default Kaiser window,
beta 5), written as raw little-endian f32 (NAME.f32).

index.json lists every file with its size, kind and tolerance, and the versions and command
that made them. Regenerate with:

    .venv/bin/python tools/media_golden.py tests/golden/media
"""
import io
import json
import math
import pathlib
import sys

import numpy as np
import PIL
import scipy
import scipy.signal
import soundfile
from PIL import Image


def picture(w, h, seed):
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w]
    r = (x * 255 // max(w - 1, 1))
    g = (y * 255 // max(h - 1, 1))
    b = ((x + y) * 97) % 256
    img = np.stack([r, g, b], axis=-1).astype(np.int32) + rng.integers(-20, 21, size=(h, w, 3))
    return np.clip(img, 0, 255).astype(np.uint8)


def images(out, index):
    rgb = picture(23, 17, 1)
    alpha = picture(23, 17, 2)[:, :, 0]
    cases = [
        ("png_rgb", "png", Image.fromarray(rgb, "RGB"), {}, 0),
        ("png_rgba", "png", Image.fromarray(np.dstack([rgb, alpha]), "RGBA"), {}, 0),
        ("png_palette", "png", Image.fromarray(rgb, "RGB").quantize(16), {}, 0),
        ("png_grey", "png", Image.fromarray(rgb[:, :, 1], "L"), {}, 0),
        ("jpeg_rgb", "jpg", Image.fromarray(rgb, "RGB"), {"quality": 90}, 1),
        ("jpeg_grey", "jpg", Image.fromarray(rgb[:, :, 0], "L"), {"quality": 90}, 1),
        ("webp_lossless", "webp", Image.fromarray(rgb, "RGB"), {"lossless": True}, 0),
        ("webp_lossy", "webp", Image.fromarray(rgb, "RGB"), {"quality": 80}, 1),
    ]
    for name, ext, im, kw, tol in cases:
        buf = io.BytesIO()
        im.save(buf, format={"png": "PNG", "jpg": "JPEG", "webp": "WEBP"}[ext], **kw)
        data = buf.getvalue()
        (out / f"{name}.{ext}").write_bytes(data)
        ref = Image.open(io.BytesIO(data)).convert("RGB")
        pix = np.asarray(ref, dtype=np.uint8)
        (out / f"{name}.rgb").write_bytes(pix.tobytes())
        index.append({"name": name, "file": f"{name}.{ext}", "kind": "image", "w": ref.width, "h": ref.height,
                      "tol": tol})


def signal(n, rate, channels, seed):
    rng = np.random.default_rng(seed)
    t = np.arange(n) / rate
    chans = []
    for c in range(channels):
        x = (0.3 * np.sin(2 * math.pi * 440 * t + c) + 0.2 * np.sin(2 * math.pi * 3000 * t) +
             0.15 * np.sin(2 * math.pi * 7900 * t) + 0.1 * rng.standard_normal(n))
        chans.append(np.clip(x, -0.9, 0.9))
    return np.stack(chans, axis=1)


def audio(out, index):
    cases = [  # name, format, subtype, rate, channels, tolerance (f32 after resampling; measured: 1 ulp)
        ("wav_pcm16_stereo_44100", "WAV", "PCM_16", 44100, 2, 1e-6),
        ("wav_pcm24_mono_22050", "WAV", "PCM_24", 22050, 1, 1e-6),
        ("wav_pcm32_mono_8000", "WAV", "PCM_32", 8000, 1, 1e-6),
        ("wav_float_stereo_48000", "WAV", "FLOAT", 48000, 2, 1e-6),
        ("wav_pcm16_mono_16000", "WAV", "PCM_16", 16000, 1, 1e-6),
        ("flac_16_stereo_32000", "FLAC", "PCM_16", 32000, 2, 1e-6),
        ("mp3_mono_24000", "MP3", "MPEG_LAYER_III", 24000, 1, 1e-5),
    ]
    for name, fmt, sub, rate, ch, tol in cases:
        x = signal(int(rate * 0.06), rate, ch, len(name))
        ext = {"WAV": "wav", "FLAC": "flac", "MP3": "mp3"}[fmt]
        buf = io.BytesIO()
        soundfile.write(buf, x, rate, format=fmt, subtype=sub)
        data = buf.getvalue()
        (out / f"{name}.{ext}").write_bytes(data)
        y, sr = soundfile.read(io.BytesIO(data), dtype="float64", always_2d=True)
        mono = y.mean(axis=1)
        g = math.gcd(16000, sr)
        ref = mono if sr == 16000 else scipy.signal.resample_poly(mono, 16000 // g, sr // g)
        (out / f"{name}.f32").write_bytes(ref.astype("<f4").tobytes())
        index.append({"name": name, "file": f"{name}.{ext}", "kind": "audio", "rate": sr, "channels": ch,
                      "n": int(ref.shape[0]), "tol": tol})


def main():
    out = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "tests/golden/media")
    out.mkdir(parents=True, exist_ok=True)
    index = []
    images(out, index)
    audio(out, index)
    meta = {"made_by": "tools/media_golden.py " + str(out), "pillow": PIL.__version__, "numpy": np.__version__,
            "scipy": scipy.__version__, "soundfile": soundfile.__version__,
            "libsndfile": soundfile.__libsndfile_version__, "cases": index}
    (out / "index.json").write_text(json.dumps(meta, indent=1) + "\n")


if __name__ == "__main__":
    main()
