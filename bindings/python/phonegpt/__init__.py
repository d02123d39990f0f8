"""libphonegpt for Python: train, fine-tune, evaluate and sample small GPT models on a CPU.

    import phonegpt
    text = open("tinyshakespeare.txt").read()
    tok = phonegpt.Tokenizer.char(text)
    ids = tok.encode(text)
    n = phonegpt.split_index(len(ids), 0.9)
    with phonegpt.Model("phonegpt", seed=1) as model:
        model.tokenizer = tok
        with phonegpt.Trainer(model, batch_size=32, lr_max=2e-3) as trainer:
            trainer.set_data(ids[:n])
            trainer.train(100, callback=lambda r: print(r.step, r.loss))
        print(model.evaluate(ids[n:]).mean_loss)
        print("".join(model.stream("ROMEO:", max_tokens=100)))

Token arrays are numpy int32 (other integer arrays and lists are converted; an int32
C-contiguous array is passed without a copy). Parameters and gradients are numpy views of the
library's memory. Errors raise subclasses of phonegpt.Error carrying the library's message.
See docs/python.md.
"""

from ._phonegpt import (  # noqa: F401  (re-exported API)
    Cancelled, ChecksumError, BufferTooSmall, Error, EvalConfig, EvalResult, EvalSampledConfig, FormatError,
    GeometryError, HEADER_VERSION, InternalError, InvalidArgument, IOError, Model, ModelConfig,
    NotFinite, OutOfMemory, SampleConfig, SaveOptions, Session, SessionConfig, StateError, StepResult, TensorInfo,
    TokenizeError, Tokenizer, TrainConfig, Trainer, Unsupported, VersionError, __version__,
    read_file, simd_arch, split_index, status_name, version, version_number,
    DataFilterReport, LoraAverageConfig, LoraAverageReport, LoraPrivacyConfig, LoraPrivacyReport, privacy_epsilon,
    Adapter, DataFilter, DataFilterConfig, LoraConfig, SigningKey, TrustedKeys, ValidationPolicy,
    ValidationCheck, ValidationReport, ValidationSummary, Validator,
    BpeTrainOptions, EncodeOptions, LoraTrainer, LoadOptions, TokenStream,
    DeviceConditions, MemoryPlan, TrainSession, TrainSessionConfig, TrainSessionReport, max_batch, memory_plan,
)

__all__ = [
    "Cancelled", "ChecksumError", "BufferTooSmall", "Error", "EvalConfig", "EvalResult", "EvalSampledConfig",
    "FormatError", "GeometryError", "HEADER_VERSION", "InternalError", "InvalidArgument", "IOError",
    "LoadOptions", "Model", "ModelConfig", "NotFinite", "OutOfMemory", "SampleConfig", "SaveOptions", "Session", "SessionConfig", "StateError",
    "StepResult", "TensorInfo", "TokenizeError", "Tokenizer", "TrainConfig", "Trainer",
    "Unsupported", "VersionError", "__version__", "read_file",
    "simd_arch", "split_index", "status_name", "version", "version_number", "version_info",
    "evaluate", "generate",
    "DataFilterReport", "LoraAverageConfig", "LoraAverageReport", "LoraPrivacyConfig", "LoraPrivacyReport",
    "privacy_epsilon",
    "Adapter", "DataFilter", "DataFilterConfig", "LoraConfig", "SigningKey", "TrustedKeys", "ValidationPolicy",
    "ValidationCheck", "ValidationReport", "ValidationSummary", "Validator",
    "BpeTrainOptions", "EncodeOptions", "LoraTrainer", "TokenStream",
    "DeviceConditions", "MemoryPlan", "TrainSession", "TrainSessionConfig", "TrainSessionReport", "max_batch",
    "memory_plan",
]


def version_info():
    """(major, minor, patch) of the loaded library."""
    n = version_number()
    return (n // 10000, n // 100 % 100, n % 100)


def _prompt_ids(model, prompt):
    """(ids, tokenizer or None): a str prompt is encoded with the model's tokenizer."""
    if isinstance(prompt, str):
        tok = model.tokenizer
        if tok is None:
            raise StateError("a text prompt needs the model's tokenizer (model.tokenizer is None)")
        return tok.encode(prompt), tok
    return prompt, None


def _sample_config(max_tokens, config, fields):
    """The SampleConfig a generate() or stream() call asks for: config (None = the library's
    defaults) with max_tokens (unless None) and the keyword fields changed."""
    if "on_token" in fields:
        raise TypeError("stream() yields the tokens itself; it takes no on_token")
    base = SampleConfig() if config is None else config
    if max_tokens is not None:
        fields = dict(fields, max_tokens=max_tokens)
    return base.replace(**fields)


def _generate(self, prompt, max_tokens=None, *, config=None, stop=(), on_token=None, **fields):
    """Generates up to max_tokens tokens after prompt (KV cache; the window slides past n_ctx).

    prompt: a str (encoded with the model's tokenizer; the result is then a str) or an integer
    array of token ids (the result is then an int32 array of the generated ids, without the
    prompt). config: a SampleConfig (None = the defaults: 256 tokens, temperature 1.0, seed
    1337, ...); max_tokens and keyword arguments change its fields (temperature 0 is greedy;
    top_k 0 and top_p 1.0 are off; slide_keep: tokens kept when the window slides past n_ctx,
    0 = n_ctx, nanoGPT's crop; smaller is faster). stop: strings that end generation after the
    token completing one of them. on_token(id) is called for each token as it is generated; a
    truthy return ends generation early (not an error). Ctrl-C interrupts (KeyboardInterrupt)."""
    options = _sample_config(max_tokens, config, fields)
    ids, tok = _prompt_ids(self, prompt)
    out = self._generate(ids, options, list(stop), on_token)
    return tok.decode(out) if tok is not None else out


class _Failure:
    def __init__(self, exc):
        self.exc = exc


def _stream(self, prompt, max_tokens=None, *, config=None, stop=(), **fields):
    """Like generate(), but an iterator: yields each new token id as it is generated, or for a
    str prompt the text it adds (a TokenStream over the model's tokenizer: the bytes of a
    character split across tokens wait for the rest; invalid UTF-8 becomes U+FFFD, so the pieces
    joined equal generate()'s text). Closing the iterator early (break) stops the generation."""
    import queue
    import threading

    options = _sample_config(max_tokens, config, fields)
    ids, tok = _prompt_ids(self, prompt)
    items = queue.Queue()
    stopping = threading.Event()
    done = object()

    def on_token(token):
        items.put(token)
        return stopping.is_set()

    def run():
        try:
            self._generate(ids, options, list(stop), on_token)
            items.put(done)
        except BaseException as e:  # handed to the consumer, raised there
            items.put(_Failure(e))

    worker = threading.Thread(target=run, name="phonegpt-generate", daemon=True)
    worker.start()
    text = TokenStream(tok) if tok is not None else None
    try:
        while True:
            try:
                item = items.get(timeout=0.05)  # short waits keep Ctrl-C responsive
            except queue.Empty:
                continue
            if item is done:
                break
            if isinstance(item, _Failure):
                raise item.exc
            if text is None:
                yield int(item)
            else:
                piece = text.push(item)
                if piece:
                    yield piece
        if text is not None:
            tail = text.finish()
            if tail:
                yield tail
    finally:
        stopping.set()
        worker.join()
        if text is not None:
            text.close()


Model.generate = _generate
Model.stream = _stream

def _session_generate(self, max_tokens=None, *, config=None, stop=(), on_token=None, **fields):
    """Generates up to max_tokens tokens after the session's sequence and appends them to it,
    so a later append() + generate() continues without recomputing what is cached. Options as
    for Model.generate (config.n_threads is not read: the session's threads run it); returns
    the generated ids (int32 array)."""
    return self._generate(_sample_config(max_tokens, config, fields), list(stop), on_token)


Session.generate = _session_generate


def evaluate(model, tokens, **options):
    """Whole-split evaluation: model.evaluate(tokens, **options)."""
    return model.evaluate(tokens, **options)


def generate(model, prompt, **options):
    """model.generate(prompt, **options)."""
    return model.generate(prompt, **options)
