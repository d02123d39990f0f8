#!/usr/bin/env bash
# The JNI overhead benchmark (docs/performance.md): BenchJniKt runs the same C API calls from
# Kotlin and from C (bench_jni_c.c, loaded into the same JVM), interleaved block by block. Two
# configurations: the PhoneGPT preset (the training step that matters) and the tiny preset
# (a short step and token, where a fixed per-call cost would show most). One JSON line each.
# Usage: bindings/kotlin/bench/run.sh [build-dir]
set -euo pipefail
cd "$(dirname "$0")/../../.."
build=$(realpath "${1:-build}")
kt="$build/bindings/kotlin"
java=(java -Djava.library.path="$kt" -cp "$kt/phonegpt-bench.jar:$kt/phonegpt.jar:/usr/share/java/kotlin-stdlib.jar" BenchJniKt)
"${java[@]}" phonegpt 8 5 9 300 2 2>/dev/null
"${java[@]}" tiny 8 200 15 4000 1 2>/dev/null
