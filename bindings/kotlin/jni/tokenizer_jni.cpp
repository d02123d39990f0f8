// The tokenizer natives (pg_tokenizer_*, pg_token_stream_*; Kotlin: Tokenizer.kt): character
// and byte-level BPE tokenizers (tiktoken rank files, GPT-2's encoder.json + vocab.bpe, Hugging
// Face tokenizer.json), encoding with special tokens, writing the files back, and the streaming
// decoder. Text crosses as UTF-8 byte arrays (a BPE token may end inside a character, and any
// byte string encodes), file contents as byte arrays read by Kotlin.
#include "struct_jni.hpp"

namespace pg_jni {
namespace {

pg_tokenizer* tokenizer_of(JNIEnv* env, jlong h) { return handle_of<pg_tokenizer>(env, h, "Tokenizer"); }

bool tokenizer_failed(JNIEnv* env, pg_status s, const pg_tokenizer* t) { return failed(env, s, t, pg_tokenizer_last_error); }

// --- creation ------------------------------------------------------------------------------

// The handle of the tokenizer `create(&tok)` makes, or 0 with the exception pending.
template <class Create>
jlong new_tokenizer(JNIEnv* env, Create create) {
    pg_tokenizer* tok = nullptr;
    return failed(env, create(&tok)) ? 0 : to_handle(tok);
}

jlong n_tokenizer_create_char(JNIEnv* env, jclass, jbyteArray jtext) {
    std::vector<char> text;
    if (!get_bytes(env, jtext, "text", &text)) return 0;
    return new_tokenizer(env, [&](pg_tokenizer** tok) {
        return pg_tokenizer_create_char(bytes_of(text), text.size(), tok);
    });
}

jlong n_tokenizer_deserialize(JNIEnv* env, jclass, jbyteArray jdata) {
    std::vector<char> data;
    if (!get_bytes(env, jdata, "data", &data)) return 0;
    return new_tokenizer(env, [&](pg_tokenizer** tok) {
        return pg_tokenizer_deserialize(bytes_of(data), data.size(), tok);
    });
}

jlong n_tokenizer_create_tiktoken(JNIEnv* env, jclass, jbyteArray jranks, jstring jencoding) {
    std::vector<char> ranks;
    std::string encoding;
    if (!get_bytes(env, jranks, "ranks", &ranks) || !get_string(env, jencoding, "encoding", &encoding)) return 0;
    return new_tokenizer(env, [&](pg_tokenizer** tok) {
        return pg_tokenizer_create_tiktoken(bytes_of(ranks), ranks.size(), encoding.c_str(), tok);
    });
}

jlong n_tokenizer_create_gpt2(JNIEnv* env, jclass, jbyteArray jencoder, jbyteArray jmerges) {
    std::vector<char> encoder, merges;
    if (!get_bytes(env, jencoder, "encoder.json", &encoder) || !get_bytes(env, jmerges, "vocab.bpe", &merges)) return 0;
    return new_tokenizer(env, [&](pg_tokenizer** tok) {
        return pg_tokenizer_create_gpt2(bytes_of(encoder), encoder.size(), bytes_of(merges), merges.size(), tok);
    });
}

jlong n_tokenizer_create_hf(JNIEnv* env, jclass, jbyteArray jjson) {
    std::vector<char> json;
    if (!get_bytes(env, jjson, "tokenizer.json", &json)) return 0;
    return new_tokenizer(env, [&](pg_tokenizer** tok) {
        return pg_tokenizer_create_hf(bytes_of(json), json.size(), tok);
    });
}

// --- BPE training -----------------------------------------------------------------------------

// Trains on `jtexts` (byte arrays, one text each); progress (a ProgressBridge, may be null) gets
// (tokens so far, vocab_size) after each merge and can cancel.
jlong n_tokenizer_train_bpe(JNIEnv* env, jclass, jobjectArray jtexts, jint vocab_size, jlongArray jfields,
                            jobjectArray jspecial, jobject bridge) {
    if (!jtexts) {
        throw_invalid(env, "trainBpe: texts is null");
        return 0;
    }
    pg_bpe_train_options o;
    if (!options_from(env, jfields, &o)) return 0;
    const jsize n = env->GetArrayLength(jtexts);
    std::vector<std::vector<char>> texts(static_cast<std::size_t>(n));
    std::vector<const char*> ptrs;
    std::vector<size_t> lens;
    for (jsize i = 0; i < n; ++i) {
        auto a = static_cast<jbyteArray>(env->GetObjectArrayElement(jtexts, i));
        const bool ok = get_bytes(env, a, "a training text", &texts[std::size_t(i)]);
        env->DeleteLocalRef(a);
        if (!ok) return 0;
        ptrs.push_back(bytes_of(texts[std::size_t(i)]));
        lens.push_back(texts[std::size_t(i)].size());
    }
    std::vector<std::string> special;
    if (!get_strings(env, jspecial, "special token", &special)) return 0;
    std::vector<const char*> special_ptrs;
    for (const std::string& t : special) special_ptrs.push_back(t.c_str());
    o.special_tokens = special_ptrs.data();
    o.n_special_tokens = int32_t(special_ptrs.size());
    Callback cb;
    cb.bridge = bridge;
    if (bridge) {
        o.progress = progress_trampoline;
        o.progress_user = &cb;
    }
    pg_tokenizer* tok = nullptr;
    const pg_status status = pg_bpe_train(ptrs.data(), lens.data(), ptrs.size(), vocab_size, &o, &tok);
    if (cb.rethrow(env) || failed(env, status)) {
        pg_tokenizer_free(tok);
        return 0;
    }
    return to_handle(tok);
}

void n_tokenizer_free(JNIEnv*, jclass, jlong h) { pg_tokenizer_free(reinterpret_cast<pg_tokenizer*>(intptr_t(h))); }

// --- queries -------------------------------------------------------------------------------

jint n_tokenizer_kind(JNIEnv* env, jclass, jlong h) {
    auto* tok = tokenizer_of(env, h);
    pg_tokenizer_kind kind{};
    if (!tok || tokenizer_failed(env, pg_tokenizer_get_kind(tok, &kind), tok)) return 0;
    return jint(kind);
}

jint n_tokenizer_vocab_size(JNIEnv* env, jclass, jlong h) {
    auto* tok = tokenizer_of(env, h);
    int32_t n = 0;
    if (!tok || tokenizer_failed(env, pg_tokenizer_vocab_size(tok, &n), tok)) return 0;
    return n;
}

jint n_tokenizer_special_id(JNIEnv* env, jclass, jlong h, jstring jtext) {
    auto* tok = tokenizer_of(env, h);
    std::string text;
    int32_t id = 0;
    if (!tok || !get_string(env, jtext, "special token", &text) ||
        tokenizer_failed(env, pg_tokenizer_special_id(tok, text.c_str(), &id), tok))
        return 0;
    return id;
}

// --- encoding and decoding -----------------------------------------------------------------

// Encodes into `out` (array or direct buffer, `capacity` elements at `offset`), or only sizes
// when both are null. The special tokens recognised: all of them, those named in `allowed`, or
// none (the defaults: pg_tokenizer_encode). Returns the number of ids the text needs (written if
// they fit; otherwise BufferTooSmallException).
jlong n_tokenizer_encode(JNIEnv* env, jclass, jlong h, jbyteArray jtext, jlongArray joptions, jobjectArray jallowed,
                         jintArray out_array, jobject out_buffer, jint offset, jint capacity) {
    auto* tok = tokenizer_of(env, h);
    std::vector<char> text;
    pg_encode_options o;
    if (!tok || !get_bytes(env, jtext, "text", &text) || !options_from(env, joptions, &o)) return 0;
    std::vector<std::string> allowed;
    if (!get_strings(env, jallowed, "allowed special token", &allowed)) return 0;
    std::vector<const char*> allowed_ptrs;
    for (const std::string& s : allowed) allowed_ptrs.push_back(s.c_str());
    o.allowed_special = allowed_ptrs.data();
    o.n_allowed_special = int32_t(allowed_ptrs.size());
    size_t n = 0;
    if (!out_array && !out_buffer) {
        pg_status s = pg_tokenizer_encode_with(tok, bytes_of(text), text.size(), &o, nullptr, 0, &n);
        if (s != PG_ERR_BUFFER_TOO_SMALL && tokenizer_failed(env, s, tok)) return 0;
        return jlong(n);
    }
    IntBulk out;
    if (!out.open(env, out_array, out_buffer, offset, capacity, "encode output", false)) return 0;
    if (tokenizer_failed(env, pg_tokenizer_encode_with(tok, bytes_of(text), text.size(), &o, out.data(), out.size(), &n), tok))
        return 0;
    out.commit(n);
    return jlong(n);
}

jbyteArray n_tokenizer_decode(JNIEnv* env, jclass, jlong h, jintArray ids_array, jobject ids_buffer, jint offset,
                              jint length) {
    auto* tok = tokenizer_of(env, h);
    IntBulk ids;
    if (!tok || !ids.open(env, ids_array, ids_buffer, offset, length, "ids", true)) return nullptr;
    return filled_bytes(env, [&](char* text, size_t cap, size_t* len) {
        return pg_tokenizer_decode(tok, ids.data(), ids.size(), text, cap, len);
    }, [&] { return pg_tokenizer_last_error(tok); });
}

// --- files ---------------------------------------------------------------------------------

jbyteArray n_tokenizer_serialize(JNIEnv* env, jclass, jlong h) {
    auto* tok = tokenizer_of(env, h);
    if (!tok) return nullptr;
    return filled_bytes(env, [&](char* data, size_t cap, size_t* len) { return pg_tokenizer_serialize(tok, data, cap, len); },
                        [&] { return pg_tokenizer_last_error(tok); });
}

jbyteArray n_tokenizer_write_file(JNIEnv* env, jclass, jlong h, jint file) {
    auto* tok = tokenizer_of(env, h);
    if (!tok) return nullptr;
    return filled_bytes(env, [&](char* data, size_t cap, size_t* len) {
        return pg_tokenizer_write_file(tok, pg_tokenizer_file(file), data, cap, len);
    }, [&] { return pg_tokenizer_last_error(tok); });
}

// --- the streaming decoder (borrows its tokenizer: Kotlin keeps it alive) -------------------

pg_token_stream* stream_of(JNIEnv* env, jlong h) { return handle_of<pg_token_stream>(env, h, "TokenStream"); }

jlong n_token_stream_create(JNIEnv* env, jclass, jlong tokenizer) {
    auto* tok = tokenizer_of(env, tokenizer);
    pg_token_stream* stream = nullptr;
    if (!tok || tokenizer_failed(env, pg_token_stream_create(tok, &stream), tok)) return 0;
    return to_handle(stream);
}

void n_token_stream_free(JNIEnv*, jclass, jlong h) {
    pg_token_stream_free(reinterpret_cast<pg_token_stream*>(intptr_t(h)));
}

// The UTF-8 bytes that the token completed (a token that was not consumed changes nothing).
jbyteArray n_token_stream_push(JNIEnv* env, jclass, jlong h, jint id) {
    auto* stream = stream_of(env, h);
    if (!stream) return nullptr;
    return filled_bytes(env, [&](char* text, size_t cap, size_t* len) { return pg_token_stream_push(stream, id, text, cap, len); },
                        [&] { return pg_token_stream_last_error(stream); });
}

jbyteArray n_token_stream_finish(JNIEnv* env, jclass, jlong h) {
    auto* stream = stream_of(env, h);
    if (!stream) return nullptr;
    return filled_bytes(env, [&](char* text, size_t cap, size_t* len) { return pg_token_stream_finish(stream, text, cap, len); },
                        [&] { return pg_token_stream_last_error(stream); });
}

const JNINativeMethod kTokenizerNatives[] = {
    PG_NATIVE("tokenizerCreateChar", "([B)J", n_tokenizer_create_char),
    PG_NATIVE("tokenizerDeserialize", "([B)J", n_tokenizer_deserialize),
    PG_NATIVE("tokenizerCreateTiktoken", "([BLjava/lang/String;)J", n_tokenizer_create_tiktoken),
    PG_NATIVE("tokenizerCreateGpt2", "([B[B)J", n_tokenizer_create_gpt2),
    PG_NATIVE("tokenizerCreateHf", "([B)J", n_tokenizer_create_hf),
    PG_NATIVE("tokenizerTrainBpe", "([[BI[J[Ljava/lang/String;Lphonegpt/ProgressBridge;)J", n_tokenizer_train_bpe),
    PG_NATIVE("tokenizerFree", "(J)V", n_tokenizer_free),
    PG_NATIVE("tokenizerKind", "(J)I", n_tokenizer_kind),
    PG_NATIVE("tokenizerVocabSize", "(J)I", n_tokenizer_vocab_size),
    PG_NATIVE("tokenizerSpecialId", "(JLjava/lang/String;)I", n_tokenizer_special_id),
    PG_NATIVE("tokenizerEncode", "(J[B[J[Ljava/lang/String;" PG_SIG_INTS ")J", n_tokenizer_encode),
    PG_NATIVE("tokenizerDecode", "(J" PG_SIG_INTS ")[B", n_tokenizer_decode),
    PG_NATIVE("tokenizerSerialize", "(J)[B", n_tokenizer_serialize),
    PG_NATIVE("tokenizerWriteFile", "(JI)[B", n_tokenizer_write_file),
    PG_NATIVE("tokenStreamCreate", "(J)J", n_token_stream_create),
    PG_NATIVE("tokenStreamFree", "(J)V", n_token_stream_free),
    PG_NATIVE("tokenStreamPush", "(JI)[B", n_token_stream_push),
    PG_NATIVE("tokenStreamFinish", "(J)[B", n_token_stream_finish),
};

}  // namespace

bool register_tokenizer_natives(JNIEnv* env, jclass natives) { return register_natives(env, natives, kTokenizerNatives); }

}  // namespace pg_jni
