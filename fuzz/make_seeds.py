#!/usr/bin/env python3
"""Writes the small seed corpus in fuzz/corpus/ (committed; re-run to regenerate).
Seeds are valid files that reach deep into each parser: every GGUF value type, nested arrays,
alignment, tensors of several block types; safetensors with several dtypes and metadata; HF
configs of the llama, qwen2 and gpt2 families."""
import json, os, struct

here = os.path.dirname(os.path.abspath(__file__))

def gstr(s):
    b = s.encode() if isinstance(s, str) else s
    return struct.pack('<Q', len(b)) + b

def kv(key, t, payload):
    return gstr(key) + struct.pack('<I', t) + payload

def gguf(version=3, alignment=32, tensors=(), kvs=()):
    body = b''.join(kvs)
    n_kv = len(kvs)
    if alignment != 32:
        body += kv('general.alignment', 4, struct.pack('<I', alignment)); n_kv += 1
    infos, data, off = b'', b'', 0
    for name, typ, ne, nbytes in tensors:
        infos += gstr(name) + struct.pack('<I', len(ne)) + b''.join(struct.pack('<Q', d) for d in ne)
        infos += struct.pack('<IQ', typ, off)
        blob = bytes((i * 37 + 11) & 0xff for i in range(nbytes))
        pad = (-nbytes) % alignment
        data += blob + b'\0' * pad
        off += nbytes + pad
    head = b'GGUF' + struct.pack('<IQQ', version, len(tensors), n_kv) + body + infos
    head += b'\0' * ((-len(head)) % alignment)
    return head + data

def all_kvs():
    return [
        kv('general.architecture', 8, gstr('llama')),
        kv('t.u8', 0, struct.pack('<B', 200)), kv('t.i8', 1, struct.pack('<b', -5)),
        kv('t.u16', 2, struct.pack('<H', 65000)), kv('t.i16', 3, struct.pack('<h', -300)),
        kv('t.u32', 4, struct.pack('<I', 4000000000)), kv('t.i32', 5, struct.pack('<i', -70000)),
        kv('t.f32', 6, struct.pack('<f', 1.5)), kv('t.bool', 7, b'\x01'),
        kv('t.u64', 10, struct.pack('<Q', 2**63 + 5)), kv('t.i64', 11, struct.pack('<q', -2**40)),
        kv('t.f64', 12, struct.pack('<d', 3.25)),
        kv('t.arr_i32', 9, struct.pack('<IQ', 5, 3) + struct.pack('<3i', 1, -2, 3)),
        kv('t.arr_str', 9, struct.pack('<IQ', 8, 3) + gstr('a') + gstr('') + gstr('héllo')),
        kv('t.nested', 9, struct.pack('<IQ', 9, 2) + struct.pack('<IQ', 6, 1) + struct.pack('<f', 2.0)
           + struct.pack('<IQ', 8, 1) + gstr('x')),
    ]

def write(dir_, name, data):
    os.makedirs(os.path.join(here, 'corpus', dir_), exist_ok=True)
    with open(os.path.join(here, 'corpus', dir_, name), 'wb') as f:
        f.write(data)

tensors = [('a.f32', 0, [4, 2], 32), ('b.f16', 1, [8], 16), ('c.q4_0', 2, [32, 2], 36),
           ('d.q8_0', 8, [32], 34), ('e.q4_K', 12, [256], 144), ('f.q6_K', 14, [256], 210),
           ('g.q2_K', 10, [256], 84), ('h.q3_K', 11, [256], 110), ('i.q5_K', 13, [256], 176),
           ('j.q5_0', 6, [32], 22), ('k.q5_1', 7, [32], 24), ('l.q4_1', 3, [32], 20),
           ('m.bf16', 30, [2, 1, 1, 3], 12), ('n.q8_K', 15, [256], 292)]
write('gguf', 'full_v3.gguf', gguf(3, 32, tensors, all_kvs()))
write('gguf', 'v2_align64.gguf', gguf(2, 64, tensors[:3], all_kvs()[:4]))
write('gguf', 'empty.gguf', gguf(3, 32, [], []))
write('gguf', 'kv_only.gguf', gguf(3, 32, [], all_kvs()))

def safetensors(entries, meta=None):
    header, data = {}, b''
    if meta: header['__metadata__'] = meta
    for name, dt, shape, nbytes in entries:
        header[name] = {'dtype': dt, 'shape': shape, 'data_offsets': [len(data), len(data) + nbytes]}
        data += bytes((i * 13 + 7) & 0xff for i in range(nbytes))
    h = json.dumps(header).encode()
    h += b' ' * ((-len(h)) % 8)
    return struct.pack('<Q', len(h)) + h + data

write('safetensors', 'mixed.safetensors', safetensors([
    ('w', 'F32', [2, 3], 24), ('h', 'F16', [4], 8), ('b', 'BF16', [1, 2], 4), ('d', 'F64', [1], 8),
    ('i', 'I64', [2], 16), ('j', 'I32', [1], 4), ('k', 'I16', [1], 2), ('l', 'I8', [3], 3),
    ('u', 'U8', [2], 2), ('z', 'BOOL', [1], 1), ('e4', 'F8_E4M3', [2], 2), ('e5', 'F8_E5M2', [2], 2),
    ('s', 'F32', [], 4), ('empty', 'F32', [0, 4], 0)], {'format': 'pt', 'note': 'seed'}))
write('safetensors', 'one.safetensors', safetensors([('x', 'F32', [1], 4)]))

llama = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64,
         "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
         "intermediate_size": 128, "vocab_size": 256, "max_position_embeddings": 512,
         "rope_theta": 500000.0, "rms_norm_eps": 1e-5, "tie_word_embeddings": False,
         "bos_token_id": 1, "eos_token_id": [2, 3], "hidden_act": "silu", "torch_dtype": "bfloat16",
         "attention_bias": False, "rope_scaling": {"rope_type": "llama3", "factor": 8.0,
         "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}}
gpt2 = {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "n_embd": 64, "n_layer": 2,
        "n_head": 4, "n_positions": 128, "n_inner": None, "vocab_size": 50257,
        "layer_norm_epsilon": 1e-5, "activation_function": "gelu_new", "bos_token_id": 50256,
        "eos_token_id": 50256}
qwen2 = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 32,
         "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 1,
         "intermediate_size": 64, "vocab_size": 100, "sliding_window": 4096,
         "use_sliding_window": False, "rope_theta": 1000000.0, "rms_norm_eps": 1e-6,
         "tie_word_embeddings": True, "rope_scaling": {"type": "yarn", "factor": 4.0}}
gen = {"bos_token_id": 1, "eos_token_id": [2, 7], "temperature": 0.6, "top_p": 0.9, "top_k": 20,
       "do_sample": True}
write('config', 'llama.json', json.dumps(llama, indent=1).encode())
write('config', 'gpt2.json', json.dumps(gpt2).encode())
write('config', 'qwen2.json', json.dumps(qwen2).encode())
write('config', 'generation.json', json.dumps(gen).encode())


# tokenizer files for fuzz_tokenizer (first byte: 0 tokenizer.model, 1 tokenizer.json, 2 vocab.json NUL merges.txt)
def varint(v):
    out = b''
    while True:
        b = v & 0x7f; v >>= 7
        out += bytes([b | (0x80 if v else 0)])
        if not v: return out
def field(num, wt, payload):
    return varint(num << 3 | wt) + payload
def ld(num, b):
    return field(num, 2, varint(len(b)) + b)
pieces = [('<unk>', 0.0, 2), ('<s>', 0.0, 3), ('</s>', 0.0, 3), ('<0x0A>', 0.0, 6), ('\u2581the', -1.5, 1), ('a', -2.0, 1)]
spm = b''.join(ld(1, ld(1, p.encode()) + field(2, 5, struct.pack('<f', sc)) + field(3, 0, varint(t))) for p, sc, t in pieces)
spm += ld(2, field(3, 0, varint(2)) + field(40, 0, varint(0)) + field(41, 0, varint(1)) + field(42, 0, varint(2)))
spm += ld(3, field(3, 0, varint(1)))
write('tokenizer', 'spm.bin', b'\0' + spm)
tj = {"added_tokens": [{"id": 5, "content": "<|end|>", "special": True}],
      "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2, "\u0120": 3, "\u0120a": 4},
                "merges": ["a b", ["\u0120", "a"]]}}
write('tokenizer', 'tokenizer_json.bin', b'\1' + json.dumps(tj).encode())
write('tokenizer', 'gpt2_files.bin', b'\2' + json.dumps({"a": 0, "b": 1, "ab": 2}).encode() + b'\0#version: 0.2\na b\n')
