"""A model that has a vision tower, for the server and web app tests (src/store/modality.h).

hearth's store calls a GGUF vision-capable when a projector GGUF sits beside it, as llama.cpp's
convert_hf_to_gguf.py --mmproj writes them. `seeing_gguf` makes such a folder from a text
model: the model linked in (as a hub snapshot links its blobs) and a projector header written by
the `gguf` package, llama.cpp's own writer, with the keys the converter sets (general.type
"mmproj", general.architecture "clip", clip.has_vision_encoder). The projector holds one tiny
tensor: the store reads headers only.
"""
import os
import pathlib

import gguf
import numpy as np


def write_projector(path, vision=True, audio=False):
    w = gguf.GGUFWriter(str(path), "clip")
    w.add_string("general.type", "mmproj")
    w.add_bool("clip.has_vision_encoder", vision)
    w.add_bool("clip.has_audio_encoder", audio)
    w.add_tensor("v.patch_embd.weight", np.zeros((2, 4), dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def seeing_gguf(folder, model):
    """folder/<model's name> linked to model, with folder/mmproj-model-f16.gguf beside it."""
    folder = pathlib.Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    link = folder / pathlib.Path(model).name
    if not link.exists():
        os.symlink(os.path.realpath(model), link)
    write_projector(folder / "mmproj-model-f16.gguf")
    return link


def projector_bytes(tmp, **kw):
    """The bytes of a projector written by write_projector (through a file under tmp)."""
    p = pathlib.Path(tmp) / "mmproj-scratch.gguf"
    write_projector(p, **kw)
    b = p.read_bytes()
    p.unlink()
    return b


def with_tower(st_bytes, name="model.vision_tower.vision_model.embeddings.patch_embedding.weight"):
    """A safetensors file's bytes with one more (f32, 4-element) tensor, a vision tower's, at the
    end of the data section: the layout the format's spec gives (u64 header length, JSON, data)."""
    import json
    import struct
    n = struct.unpack("<Q", st_bytes[:8])[0]
    header = json.loads(st_bytes[8:8 + n])
    data = st_bytes[8 + n:]
    header[name] = {"dtype": "F32", "shape": [4], "data_offsets": [len(data), len(data) + 16]}
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + data + b"\0" * 16
