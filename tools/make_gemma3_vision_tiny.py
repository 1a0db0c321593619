#!/usr/bin/env python3
"""Make a tiny random-init Gemma 3 vision checkpoint (transformers' Gemma3ForConditionalGeneration)
and record transformers' f32 reference outputs for it.

How the goldens were made (re-run to regenerate; deterministic for given library versions,
which are recorded in the golden's "provenance"):
    python3 -m venv /tmp/tenv && /tmp/tenv/bin/pip install -r requirements/transformers.txt
    /tmp/tenv/bin/python tools/make_gemma3_vision_tiny.py --out tests/golden/hf

What it writes under --out:
  gemma3-vision/          the checkpoint, save_pretrained in bf16 (the reference runs in f32 on
                          those values, widened): a SigLIP tower (image 64,
                          patch 8, hidden 32, 2 heads, 2 layers, GELU-tanh MLP of 64), the
                          multimodal projector (8 x 8 patches average-pooled to 4 x 4 = 16 soft
                          tokens per image, Gemma RMSNorm, matmul to the text width), and a
                          2-layer Gemma 3 text decoder (hidden 32, 2 heads, 1 kv head, head dim
                          16, sliding window 8 on layer 0, shorter than one image's 16 tokens);
                          a byte-level BPE tokenizer.json with the image specials added, a
                          ChatML-shaped chat template that writes <start_of_image> for an image
                          part, generation_config.json and Gemma3ImageProcessorPil's
                          preprocessor_config.json
  gemma3-vision/*.png     two test images (64 x 64, and 50 x 40 which the processor resizes)
  gemma3-vision.json      provenance; the images; per prompt its text, the
                          ids the processor made of it (each <start_of_image> expanded to
                          "\\n\\n<start_of_image>" + 16 x <image_soft_token> + "<end_of_image>\\n\\n"),
                          its token_type_ids, the images it holds, the argmax at every position
                          and a 16-token greedy continuation (full recompute per step, the new
                          tokens typed 0)
  gemma3-vision.resized.rgb  u8 [image][64][64][3]: each image as Gemma3ImageProcessorPil resizes
                          it (PIL bilinear on the uint8 image); its pixel_values are exactly
                          (u8 / 255 - 0.5) / 0.5 in f32, which the script asserts
  gemma3-vision.embeds.bin   f32 [image][16][32]: get_image_features(pixel_values).pooler_output,
                          the rows that replace the soft tokens' embeddings
  gemma3-vision.logits.bin   f32 [positions of all prompts][vocab]: logits at every position, eager
                          attention with token_type_ids (bidirectional within an image)
"""
import argparse, copy, datetime, json, os, shutil, sys

import numpy as np
import PIL
from PIL import Image
import torch
import transformers
import tokenizers
import safetensors
from tokenizers import Tokenizer, models, pre_tokenizers, decoders, trainers

SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<start_of_image>", "<image_soft_token>",
            "<end_of_image>"]
TEMPLATE = ("{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' }}"
            "{% if message['content'] is string %}{{ message['content'] }}{% else %}"
            "{% for item in message['content'] %}{% if item['type'] == 'image' %}{{ '<start_of_image>' }}"
            "{% elif item['type'] == 'text' %}{{ item['text'] }}{% endif %}{% endfor %}{% endif %}"
            "{{ '<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}"
            "{% endif %}")
PROMPTS = [
    ("<|im_start|>user\nWhat is in <start_of_image> this picture?<|im_end|>\n<|im_start|>assistant\n", [0]),
    ("<|im_start|>user\nCompare<start_of_image>with<start_of_image>now.<|im_end|>\n<|im_start|>assistant\n", [1, 0]),
]
GREEDY = 16


def make_tokenizer():
    """A byte-level BPE of 280 tokens (256 bytes, merges, 6 specials) trained on a fixed text."""
    text = ("Once upon a time there was a tiny model that looked at pictures. " * 20 +
            "The quick brown fox jumps over the lazy dog. " * 20 + "What is in this picture? " * 20)
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=280, special_tokens=SPECIALS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator([text], trainer)
    return transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token="<|im_end|>", unk_token=None, chat_template=TEMPLATE,
        extra_special_tokens={"boi_token": "<start_of_image>", "image_token": "<image_soft_token>",
                              "eoi_token": "<end_of_image>"})


def make_images():
    """Two deterministic RGB images: 64 x 64 (no resize) and 50 x 40 (resized up to 64 x 64)."""
    rng = np.random.default_rng(7)
    out = []
    for (w, h) in ((64, 64), (50, 40)):
        y, x = np.mgrid[0:h, 0:w]
        base = np.stack([x * 255.0 / w, y * 255.0 / h, (x + y) * 127.0 / (w + h) + 64], -1)
        px = np.clip(base + rng.normal(0, 40, base.shape), 0, 255).astype(np.uint8)
        out.append(Image.fromarray(px, "RGB"))
    return out


def build(tok):
    ids = {t: tok.convert_tokens_to_ids(t) for t in SPECIALS}
    vocab = len(tok)
    text = dict(vocab_size=vocab, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                num_key_value_heads=1, head_dim=16, query_pre_attn_scalar=16, sliding_window=8,
                max_position_embeddings=256, rms_norm_eps=1e-6, initializer_range=0.25, bos_token_id=None,
                eos_token_id=ids["<|im_end|>"], pad_token_id=None,
                layer_types=["sliding_attention", "full_attention"],
                rope_parameters={"sliding_attention": dict(rope_type="default", rope_theta=10000.0),
                                 "full_attention": dict(rope_type="linear", rope_theta=1000000.0, factor=8.0)})
    vision = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2, image_size=64,
                  patch_size=8, num_channels=3, layer_norm_eps=1e-6, hidden_act="gelu_pytorch_tanh",
                  vision_use_head=False)
    cfg = transformers.Gemma3Config(text_config=text, vision_config=vision, mm_tokens_per_image=16,
                                    boi_token_index=ids["<start_of_image>"], eoi_token_index=ids["<end_of_image>"],
                                    image_token_index=ids["<image_soft_token>"], eos_token_id=ids["<|im_end|>"])
    cfg._attn_implementation = "eager"
    torch.manual_seed(23)
    model = transformers.Gemma3ForConditionalGeneration(cfg).float().eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight") and "vision_tower" not in name:
                p.copy_(0.2 * torch.randn_like(p))        # Gemma norms multiply by (1 + w)
            elif "vision_tower" in name and ("layer_norm" in name or "post_layernorm" in name):
                p.copy_((1.0 if name.endswith("weight") else 0.0) + 0.2 * torch.randn_like(p))
            elif name.endswith("bias"):
                p.copy_(0.1 * torch.randn_like(p))
            elif "vision_tower" in name or "mm_input_projection" in name:
                p.copy_(0.3 * torch.randn_like(p))
            else:
                p.copy_(0.25 * torch.randn_like(p))
    return model


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="tests/golden/hf")
    args = ap.parse_args()
    torch.set_num_threads(1)
    provenance = {"tool": "tools/make_gemma3_vision_tiny.py", "transformers": transformers.__version__,
                  "torch": torch.__version__, "tokenizers": tokenizers.__version__, "pillow": PIL.__version__,
                  "safetensors": safetensors.__version__, "date": datetime.date.today().isoformat(),
                  "attention": "eager", "dtype": "float32", "image_processor": "Gemma3ImageProcessorPil"}
    d = os.path.join(args.out, "gemma3-vision")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    tok = make_tokenizer()
    model = build(tok)
    model.generation_config = transformers.GenerationConfig(eos_token_id=tok.convert_tokens_to_ids("<|im_end|>"),
                                                            do_sample=False)
    # a bf16 copy is saved; the f32 model (whose buffers, RoPE tables and the embedding scale,
    # stay f32) computes the reference on the parameters rounded as the checkpoint holds them
    copy.deepcopy(model).to(torch.bfloat16).save_pretrained(d)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(p.to(torch.bfloat16).float())
    tok.save_pretrained(d)
    improc = transformers.Gemma3ImageProcessorPil(size={"height": 64, "width": 64}, do_pan_and_scan=False)
    proc = transformers.Gemma3Processor(image_processor=improc, tokenizer=tok, chat_template=TEMPLATE,
                                        image_seq_length=16)
    improc.save_pretrained(d)
    for f in ("special_tokens_map.json",):
        if os.path.exists(os.path.join(d, f)):
            os.remove(os.path.join(d, f))
    images = make_images()
    for i, im in enumerate(images):
        im.save(os.path.join(d, "image%d.png" % i))
    pixels = improc(images, return_tensors="pt")["pixel_values"].float()
    resized = [np.array(im.resize((64, 64), Image.BILINEAR)) for im in images]
    for i, r in enumerate(resized):
        want = torch.from_numpy(((r.astype(np.float32) / 255.0 - 0.5) / 0.5).transpose(2, 0, 1).copy())
        assert torch.allclose(pixels[i], want, atol=1e-6, rtol=0), "pixel_values are not the resized bytes"
    np.stack(resized).astype(np.uint8).tofile(os.path.join(args.out, "gemma3-vision.resized.rgb"))
    meta = {"provenance": provenance, "mm_tokens_per_image": 16,
            "image_files": [{"file": "gemma3-vision/image%d.png" % i, "width": im.width, "height": im.height}
                       for i, im in enumerate(images)],
            "prompts": []}
    rows = []
    with torch.no_grad():
        emb = model.model.get_image_features(pixels).pooler_output.float()
        emb.numpy().astype("<f4").tofile(os.path.join(args.out, "gemma3-vision.embeds.bin"))
        for text, which in PROMPTS:
            enc = proc(text=[text], images=[[images[i] for i in which]], return_tensors="pt")
            ids, tt, pv = enc["input_ids"], enc["token_type_ids"], enc["pixel_values"]
            assert torch.equal(pv, pixels[which])
            out = model(input_ids=ids, token_type_ids=tt, pixel_values=pv).logits[0].float()
            rows.append(out.numpy().astype("<f4"))
            seq, types = ids.clone(), tt.clone()
            for _ in range(GREEDY):
                nxt = model(input_ids=seq, token_type_ids=types, pixel_values=pv).logits[0, -1]
                seq = torch.cat([seq, torch.tensor([[int(torch.argmax(nxt))]])], 1)
                types = torch.cat([types, torch.zeros((1, 1), dtype=types.dtype)], 1)
            meta["prompts"].append({"text": text, "images": which, "ids": ids[0].tolist(),
                                    "token_type_ids": tt[0].tolist(),
                                    "argmax": [int(x) for x in out.argmax(-1)],
                                    "greedy16": seq[0, ids.shape[1]:].tolist()})
    np.concatenate(rows).tofile(os.path.join(args.out, "gemma3-vision.logits.bin"))
    json.dump(meta, open(os.path.join(args.out, "gemma3-vision.json"), "w"), indent=1)
    print("gemma3-vision ok", file=sys.stderr)


if __name__ == "__main__":
    main()
