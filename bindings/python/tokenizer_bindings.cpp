// phonegpt.Tokenizer: character tokenizers and byte-level BPE (tiktoken, GPT-2 and Hugging Face
// files, training, special tokens, writing the files back), text <-> int32 token ids; and
// phonegpt.TokenStream, the text of generated tokens one at a time.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <phonegpt/phonegpt.h>

#include "binding_handles.hpp"
#include "struct_bindings.hpp"

#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace pg_py {

Tokenizer Tokenizer::from_text(const std::string& text) {
    pg_tokenizer* t = nullptr;
    call_nogil([&] { return pg_tokenizer_create_char(text.data(), text.size(), &t); });
    return Tokenizer(own_tokenizer(t));
}

Tokenizer Tokenizer::from_bytes(const py::bytes& data) {
    std::string s = data;
    pg_tokenizer* t = nullptr;
    check(pg_tokenizer_deserialize(s.data(), s.size(), &t));
    return Tokenizer(own_tokenizer(t));
}

Tokenizer Tokenizer::copy_of(const pg_tokenizer* borrowed) {
    return from_bytes(py::bytes(sized_output(
        [&](char* out, size_t cap, size_t* len) { return pg_tokenizer_serialize(borrowed, out, cap, len); }, check)));
}

std::string Tokenizer::kind() const {
    pg_tokenizer_kind k;
    check(pg_tokenizer_get_kind(get(), &k));
    return k == PG_TOKENIZER_CHAR ? "char" : k == PG_TOKENIZER_BPE ? "bpe" : "kind" + std::to_string(int(k));
}

int Tokenizer::vocab_size() const {
    int32_t v = 0;
    check(pg_tokenizer_vocab_size(get(), &v));
    return v;
}

py::array_t<int32_t> Tokenizer::encode(const py::object& text_obj) const {
    const std::string text = text_bytes(text_obj, "text");
    pg_tokenizer* t = get();
    auto keep = p_;
    // Every token covers at least one byte, so len(text) ids always suffice.
    std::vector<int32_t> ids(text.size());
    size_t n = 0;
    call_nogil([&] { return pg_tokenizer_encode(t, text.data(), text.size(), ids.data(), ids.size(), &n); });
    py::array_t<int32_t> out{py::ssize_t(n)};
    if (n) std::memcpy(out.mutable_data(), ids.data(), n * sizeof(int32_t));
    return out;
}

py::bytes Tokenizer::decode_bytes(const TokensArg& ids_obj) const {
    pg_tokenizer* t = get();
    TokenArray ids = as_tokens(ids_obj, "ids", 1);
    const int32_t* p = ids.data();
    const size_t n = size_t(ids.size());
    const std::string text = sized_output(
        [&](char* out, size_t cap, size_t* len) { return pg_tokenizer_decode(t, p, n, out, cap, len); }, check,
        n * 4 + 1);  // most tokens are at most 4 bytes: usually one call
    return py::bytes(text);
}

py::str Tokenizer::decode(const TokensArg& ids) const {
    std::string b = decode_bytes(ids);
    return py::reinterpret_steal<py::str>(PyUnicode_DecodeUTF8(b.data(), py::ssize_t(b.size()), "replace"));
}

// ---- byte-level BPE (owner: bpe) ------------------------------------------------------

namespace {

// A tokenizer file given as its contents (bytes, bytearray, memoryview) or as its path (str or
// os.PathLike, read with pg_read_file, whose message names the path).
std::string file_contents(const py::object& source, const char* call, const char* what) {
    if (py::isinstance<py::bytes>(source) || py::isinstance<py::bytearray>(source) ||
        py::isinstance<py::memoryview>(source))
        return py::module_::import("builtins").attr("bytes")(source).cast<std::string>();
    if (!py::isinstance<py::str>(source) && !py::hasattr(source, "__fspath__"))
        throw py::type_error(std::string(call) + ": " + what +
                             " must be the file's contents (bytes) or its path (str or os.PathLike), got " +
                             std::string(py::str(py::type::of(source).attr("__name__"))));
    const std::string path = to_path(source);
    char* data = nullptr;
    size_t len = 0;
    call_nogil([&] { return pg_read_file(path.c_str(), &data, &len); });
    std::string out(data, len);
    pg_buffer_free(data);
    return out;
}

}  // namespace

Tokenizer Tokenizer::from_tiktoken(const py::object& ranks, const std::string& encoding) {
    const std::string r = file_contents(ranks, "Tokenizer.from_tiktoken", "ranks");
    pg_tokenizer* t = nullptr;
    call_nogil([&] { return pg_tokenizer_create_tiktoken(r.data(), r.size(), encoding.c_str(), &t); });
    return Tokenizer(own_tokenizer(t));
}

Tokenizer Tokenizer::from_gpt2(const py::object& encoder_json, const py::object& vocab_bpe) {
    const std::string e = file_contents(encoder_json, "Tokenizer.from_gpt2", "encoder_json"),
                      v = file_contents(vocab_bpe, "Tokenizer.from_gpt2", "vocab_bpe");
    pg_tokenizer* t = nullptr;
    call_nogil([&] { return pg_tokenizer_create_gpt2(e.data(), e.size(), v.data(), v.size(), &t); });
    return Tokenizer(own_tokenizer(t));
}

Tokenizer Tokenizer::from_hf(const py::object& source) {
    const std::string tokenizer_json = file_contents(source, "Tokenizer.from_hf", "tokenizer_json");
    pg_tokenizer* t = nullptr;
    call_nogil([&] { return pg_tokenizer_create_hf(tokenizer_json.data(), tokenizer_json.size(), &t); });
    return Tokenizer(own_tokenizer(t));
}

py::array_t<int32_t> Tokenizer::encode_special(const py::object& text_obj, const py::object& allowed,
                                               pg_encode_options o) const {
    const std::string text = text_bytes(text_obj, "text");
    pg_tokenizer* t = get();
    auto keep = p_;
    std::vector<std::string> names;
    if (allowed.is_none()) {
    } else if (py::isinstance<py::str>(allowed)) {
        if (allowed.cast<std::string>() != "all") throw py::value_error("allowed_special is \"all\" or a list of texts");
        o.allow_all_special = 1;
    } else {
        for (const auto& item : allowed) names.push_back(item.cast<std::string>());
    }
    std::vector<const char*> ptrs;
    for (const auto& n : names) ptrs.push_back(n.c_str());
    o.allowed_special = ptrs.data();
    o.n_allowed_special = int32_t(ptrs.size());
    std::vector<int32_t> ids(text.size() + 1);
    size_t n = 0;
    call_nogil([&] { return pg_tokenizer_encode_with(t, text.data(), text.size(), &o, ids.data(), ids.size(), &n); });
    py::array_t<int32_t> out{py::ssize_t(n)};
    if (n) std::memcpy(out.mutable_data(), ids.data(), n * sizeof(int32_t));
    return out;
}

py::bytes Tokenizer::write_file(const std::string& file) const {
    pg_tokenizer_file f;
    if (file == "tiktoken") f = PG_TOKENIZER_FILE_TIKTOKEN;
    else if (file == "gpt2_encoder") f = PG_TOKENIZER_FILE_GPT2_ENCODER;
    else if (file == "gpt2_merges") f = PG_TOKENIZER_FILE_GPT2_MERGES;
    else if (file == "hf_json") f = PG_TOKENIZER_FILE_HF_JSON;
    else throw py::value_error("file is one of tiktoken, gpt2_encoder, gpt2_merges, hf_json");
    pg_tokenizer* t = get();
    return py::bytes(sized_output(
        [&](char* out, size_t cap, size_t* len) { return pg_tokenizer_write_file(t, f, out, cap, len); }, check));
}

int32_t Tokenizer::special_id(const std::string& text) const {
    int32_t id = -1;
    check(pg_tokenizer_special_id(get(), text.c_str(), &id));
    return id;
}

// ---- end of byte-level BPE -------------------------------------------------------------

py::bytes Tokenizer::to_bytes() const {
    pg_tokenizer* t = get();
    return py::bytes(sized_output(
        [&](char* out, size_t cap, size_t* len) { return pg_tokenizer_serialize(t, out, cap, len); }, check));
}

namespace {

// Tokenizer.encode_special (owner: bpe): allowed_special None takes the options as they are,
// except that with neither config nor fields it means "all" (the call's default).
py::array_t<int32_t> tokenizer_encode_special(const Tokenizer& tok, const py::object& text, const py::object& allowed,
                                              const py::object& config, const py::kwargs& fields) {
    const bool options_given = !config.is_none() || fields.size() > 0;
    const py::object which = allowed.is_none() && !options_given ? py::object(py::str("all")) : allowed;
    return tok.encode_special(text, which, options_from<pg_encode_options>(config, fields));
}

// TokenStream: the text of generated tokens, one token at a time (pg_token_stream). It borrows
// its tokenizer; the handle's reference keeps it alive (Tokenizer.close() too). Its calls are
// short and keep the GIL, which serialises them.
struct TokenStreamHandle {
    TokenizerPtr tokenizer;
    pg_token_stream* stream = nullptr;
    ~TokenStreamHandle() { pg_token_stream_free(stream); }
};

class TokenStream {
public:
    explicit TokenStream(py::object tokenizer) : tokenizer_obj_(std::move(tokenizer)) {
        if (!py::isinstance<Tokenizer>(tokenizer_obj_)) throw py::type_error("expected a phonegpt.Tokenizer");
        auto h = std::make_shared<TokenStreamHandle>();
        h->tokenizer = tokenizer_obj_.cast<const Tokenizer&>().ptr();
        check(pg_token_stream_create(h->tokenizer.get(), &h->stream));
        p_ = std::move(h);
    }

    py::object tokenizer() const { return tokenizer_obj_; }
    void close() { p_.reset(); }
    bool closed() const { return !p_; }

    // The text that token `id` completes ("" while a character is unfinished); always valid UTF-8.
    py::str push(int32_t id) {
        pg_token_stream* s = get();
        return py::str(sized_output([&](char* t, size_t cap, size_t* len) { return pg_token_stream_push(s, id, t, cap, len); },
                                  check, kGuess));
    }
    // What is still held (an unfinished character as U+FFFD); the stream starts a new text after.
    py::str finish() {
        pg_token_stream* s = get();
        return py::str(sized_output([&](char* t, size_t cap, size_t* len) { return pg_token_stream_finish(s, t, cap, len); },
                                  check, kGuess));
    }

private:
    static constexpr size_t kGuess = 64;  // one call for any ordinary token's text

    pg_token_stream* get() const {
        if (!p_) raise_state("the TokenStream is closed");
        return p_->stream;
    }

    py::object tokenizer_obj_;  // the Python Tokenizer (kept alive with the stream)
    std::shared_ptr<TokenStreamHandle> p_;
};

// Tokenizer.train (owner: bpe): texts is one str/bytes or a sequence of them; the GIL is released
// while training, progress(done, total) (tokens so far, vocab_size) cancels with a truthy return.
Tokenizer train_bpe_tokenizer(const py::object& texts_obj, int32_t vocab_size, const py::object& config,
                              const std::vector<std::string>& special_tokens, const py::object& progress,
                              const py::kwargs& fields) {
    pg_bpe_train_options o = options_from<pg_bpe_train_options>(config, fields);
    std::vector<std::string> texts;
    if (py::isinstance<py::str>(texts_obj) || py::isinstance<py::bytes>(texts_obj)) {
        texts.push_back(texts_obj.cast<std::string>());
    } else {
        for (const auto& item : texts_obj) texts.push_back(item.cast<std::string>());
    }
    std::vector<const char*> ptrs, specials;
    std::vector<size_t> lens;
    for (const auto& t : texts) ptrs.push_back(t.data()), lens.push_back(t.size());
    for (const auto& s : special_tokens) specials.push_back(s.c_str());
    o.special_tokens = specials.empty() ? nullptr : specials.data();
    o.n_special_tokens = int32_t(specials.size());
    Callback cb{progress, {}};
    o.progress = [](void* user, int64_t done, int64_t total) -> int {
        return static_cast<Callback*>(user)->invoke(done, total) ? 1 : 0;
    };
    o.progress_user = &cb;
    pg_tokenizer* t = nullptr;
    pg_status s;
    std::string message;
    {
        py::gil_scoped_release nogil;
        s = pg_bpe_train(ptrs.data(), lens.data(), ptrs.size(), vocab_size, &o, &t);
        if (s != PG_OK) message = pg_last_error();
    }
    cb.error.raise_if_set();
    if (s != PG_OK) raise_status(s, message);
    return Tokenizer(own_tokenizer(t));
}

}  // namespace

void bind_tokenizer(py::module_& m) {
    py::class_<Tokenizer> tok(m, "Tokenizer",
        "A tokenizer: text <-> int32 token ids. Build a character tokenizer with\n"
        "Tokenizer.char(text) (vocabulary = sorted set of the text's code points).");
    tok.def_static("char", &Tokenizer::from_text, py::arg("text"),
                   "A character tokenizer whose vocabulary is the sorted set of code points of text.")
        .def_static("from_bytes", &Tokenizer::from_bytes, py::arg("data"), "Restores a tokenizer from to_bytes().")
        .def_property_readonly("kind", &Tokenizer::kind, "'char' or 'bpe'.")
        .def_property_readonly("vocab_size", &Tokenizer::vocab_size)
        .def("__len__", &Tokenizer::vocab_size)
        .def("encode", &Tokenizer::encode, py::arg("text"),
             "Encodes text to an int32 array; an unknown character raises TokenizeError.")
        .def("decode", &Tokenizer::decode, py::arg("ids"), "Decodes ids to str.")
        .def("decode_bytes", &Tokenizer::decode_bytes, py::arg("ids"), "Decodes ids to UTF-8 bytes.")
        .def("to_bytes", &Tokenizer::to_bytes, "Serialises the tokenizer (kind, version, vocabulary).")
        // byte-level BPE (owner: bpe)
        .def_static("from_tiktoken", &Tokenizer::from_tiktoken, py::arg("ranks"), py::arg("encoding"),
                    "Byte-level BPE from a .tiktoken rank file (its path, or its contents as bytes) and an\n"
                    "encoding name (gpt2, r50k_base, p50k_base, cl100k_base, o200k_base) or the regex of one of\n"
                    "their pre-tokenizers.")
        .def_static("from_gpt2", &Tokenizer::from_gpt2, py::arg("encoder_json"), py::arg("vocab_bpe"),
                    "Byte-level BPE from GPT-2's encoder.json and vocab.bpe (paths, or contents as bytes).")
        .def_static("from_hf", &Tokenizer::from_hf, py::arg("tokenizer_json"),
                    "Byte-level BPE from a Hugging Face tokenizer.json: its path (str or os.PathLike), or its\n"
                    "contents as bytes.")
        .def_static("train", &train_bpe_tokenizer, py::arg("texts"), py::arg("vocab_size"),
                    py::arg("config") = py::none(), py::kw_only(), py::arg("special_tokens") = std::vector<std::string>{},
                    py::arg("progress") = py::none(),
                    "Trains a byte-level BPE tokenizer (HF BpeTrainer's merges) on texts (one str/bytes or a\n"
                    "list; each is pre-split on its own) to at most vocab_size tokens: special_tokens get ids\n"
                    "0.., then the 256 bytes, then the merges. config: BpeTrainOptions (or its fields as\n"
                    "keywords: min_frequency, pattern 'gpt2'/'cl100k'/'o200k', n_threads).\n"
                    "progress(done, total) is called after each merge; a truthy return cancels.")
        .def("encode_special", &tokenizer_encode_special, py::arg("text"), py::arg("allowed_special") = py::none(),
             py::arg("config") = py::none(),
             "Encodes text (str or bytes) recognising special tokens: allowed_special \"all\" or a list of\n"
             "their texts; config: EncodeOptions (or allow_all_special=... as a keyword). With neither\n"
             "allowed_special nor options every special token is recognised.")
        .def("write_file", &Tokenizer::write_file, py::arg("file"),
             "A BPE tokenizer as file bytes: \"tiktoken\", \"gpt2_encoder\", \"gpt2_merges\" or \"hf_json\".")
        .def("special_id", &Tokenizer::special_id, py::arg("text"),
             "The id of the special token whose text is text (e.g. \"<|endoftext|>\"); InvalidArgument if it\n"
             "is none of the tokenizer's special tokens (a character tokenizer has none).")
        .def("__repr__", [](const Tokenizer& t) {
            if (t.closed()) return std::string("<phonegpt.Tokenizer closed>");
            return "<phonegpt.Tokenizer kind=" + t.kind() + " vocab_size=" + std::to_string(t.vocab_size()) + ">";
        });
    add_lifetime<Tokenizer>(tok, "tokenizer");

    py::class_<TokenStream> ts(m, "TokenStream",
        "Text from token ids one at a time, as a generation makes them (pg_token_stream):\n"
        "TokenStream(tokenizer). push(id) returns the text that became complete UTF-8, keeping the\n"
        "first bytes of a character split across tokens for the next push; finish() returns what is\n"
        "held and starts a new text. Bytes that can never become valid UTF-8 are U+FFFD, one per\n"
        "maximal subpart (as errors=\"replace\"), so the pieces joined equal Tokenizer.decode(ids).");
    ts.def(py::init<py::object>(), py::arg("tokenizer"))
        .def_property_readonly("tokenizer", &TokenStream::tokenizer)
        .def("push", &TokenStream::push, py::arg("id"),
             "Adds one token; returns the text it completes ('' while a character is unfinished).\n"
             "An id outside the vocabulary raises InvalidArgument and changes nothing.")
        .def("finish", &TokenStream::finish,
             "Ends the text: returns what is still held (an unfinished character becomes U+FFFD).");
    add_lifetime<TokenStream>(ts, "token stream");
}

}  // namespace pg_py
